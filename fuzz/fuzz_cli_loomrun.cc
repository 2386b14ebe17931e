// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: loomrun's command line (parse_options; nothing is launched).
#include "fuzz_argv.hh"
#include "tools/loomrun/loomrun.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    loom::fuzz::fuzz_argv args("loomrun", data, size);
    (void)loom::loomrun::parse_options(args.argc(), args.argv.data());
    return 0;
}
