// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: loom-bench's command line (parse_options; nothing is run).
#include "fuzz_argv.hh"
#include "tools/loom-bench/bench.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    loom::fuzz::fuzz_argv args("loom-bench", data, size);
    loom::bench::options o;
    std::string error;
    (void)loom::bench::parse_options(args.argc(), args.argv.data(), &o, &error);
    return 0;
}
