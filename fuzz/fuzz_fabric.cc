// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the fabric file reader (loom-sim run/topology --fabric FILE.json).
#include <string_view>

#include "topology/fabric.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto f = loom::topology::parse_fabric_json(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    (void)f;
    return 0;
}
