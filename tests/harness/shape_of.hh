// A fabric shape from its text, failing the running test when the text does not parse; the
// axis of a move between neighbours.
#pragma once

#include <string_view>

#include "test_main.hh"
#include "topology/topology.hh"

namespace loom::test {

inline topology::shape shape_of(std::string_view text) {
    auto s = topology::shape::parse(text);
    if (!s) {
        fail_msg("%s", s.error().to_string().c_str());
    }
    return *s;
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
