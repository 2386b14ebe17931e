// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: loom-bench --baseline FILE (an earlier --json output).
#include <string_view>

#include "tools/loom-bench/bench.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    loom::bench::baseline base;
    (void)loom::bench::parse_baseline(std::string_view(reinterpret_cast<const char*>(data), size),
                                      "fuzz", &base);
    return 0;
}
