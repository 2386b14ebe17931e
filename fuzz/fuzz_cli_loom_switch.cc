// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: loom-switch's command line (its flags and check_options; no node is
// started).
#include "fuzz_argv.hh"
#include "tools/loom-switch/options.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    loom::fuzz::fuzz_argv args("loom-switch", data, size);
    CLI::App app{"fuzz", "loom-switch"};
    loom::switch_tool::options o;
    loom::switch_tool::add_options(app, o);
    try {
        app.parse(args.argc(), args.argv.data());
    } catch (const CLI::ParseError&) {
        return 0;  // main prints these as one line
    }
    (void)loom::switch_tool::check_options(o);
    return 0;
}
