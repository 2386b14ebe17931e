// SPDX-License-Identifier: Apache-2.0
// A fabric shape from its text, failing the running test when the text does not parse; the
// axis of a move between neighbours; a status or result checked in one line, ok or an error.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "test_main.hh"
#include "topology/topology.hh"

namespace loom::test {

/// Fails the test with `st`'s error unless it is ok.
inline void expect_ok(const status& st) {
    if (!st) {
        LOOM_FAIL(st.to_string());
    }
}

/// `r`'s value; fails the test with its error when it holds none.
template <typename T>
T ok_value(result<T> r) {
    expect_ok(r ? status{} : r.error());
    return std::move(r).value();
}

/// Fails the test unless `st` is an error of class `code` whose message holds `part`;
/// `input` names what must not be accepted.
inline void expect_error(const status& st, loom_status_t code, const std::string& part,
                         const std::string& input) {
    if (st.is_ok()) {
        LOOM_FAIL("accepted " + input + "; expected an error containing '" + part + "'");
    }
    assert_int_equal(st.code(), code);
    expect_has(st.message(), part);
}

template <typename T>
void expect_error(const result<T>& r, loom_status_t code, const std::string& part,
                  const std::string& input) {
    expect_error(r ? status{} : r.error(), code, part, input);
}

inline topology::shape shape_of(std::string_view text) {
    return ok_value(topology::shape::parse(text));
}

/// The axis a move between neighbours a and b changes (the only coordinate that differs);
/// -1 when a == b.
inline int axis_of_move(const topology::shape& s, int a, int b) {
    auto ca = s.coords(a), cb = s.coords(b);
    for (int i = 0; i < s.ndims(); ++i) {
        if (ca[i] != cb[i]) {
            return i;
        }
    }
    return -1;
}

}  // namespace loom::test
