// SPDX-License-Identifier: Apache-2.0
// A table of cases over one body: LOOM_CASE(name, statement) is a CMocka entry named `name`
// that runs `statement`, so cases that differ only in an argument are rows of the suite's
// table, each still its own case in the TAP output.
#pragma once

#include "test_main.hh"

namespace loom::test {

inline CMUnitTest make_case(const char* name, CMUnitTestFunction run) {
    return {name, run, nullptr, nullptr, nullptr};
}

}  // namespace loom::test

#define LOOM_CASE(name, ...) ::loom::test::make_case(#name, [](void**) { __VA_ARGS__; })
