// SPDX-License-Identifier: Apache-2.0
// The value of a result a test cannot go on without: the test fails with the error otherwise.
#pragma once

#include <utility>

#include "base/status.hh"
#include "test_main.hh"

namespace loom::test {

template <class T>
T value_or_fail(result<T> r) {
    if (!r) {
        LOOM_FAIL(r.error().to_string());
    }
    return std::move(r).value();
}

}  // namespace loom::test
