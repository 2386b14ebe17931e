// A fabric shape from its text, failing the running test when the text does not parse.
#pragma once

#include "test_main.hh"
#include "topology/topology.hh"

namespace loom::test {

inline topology::shape shape_of(const char* text) {
    auto s = topology::shape::parse(text);
    if (!s) {
        fail_msg("%s", s.error().to_string().c_str());
    }
    return *s;
}

}  // namespace loom::test
