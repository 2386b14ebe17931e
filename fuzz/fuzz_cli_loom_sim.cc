// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: loom-sim's call flags (--collective, --ranks, --count, … as the
// schedule, verify and predict verbs take them, through make_call) and its value parsers
// (sizes, times, rates). Nothing is generated or simulated.
#include "fuzz_argv.hh"
#include "tools/loom-sim/loom_sim.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace loom::sim_tool;
    loom::fuzz::fuzz_argv args("loom-sim", data, size);
    CLI::App app{"fuzz", "loom-sim"};
    call_flags f;
    add_call_flags(app, f, call_flag_set::full);
    try {
        app.parse(args.argc(), args.argv.data());
        (void)make_call(f);
    } catch (const CLI::ParseError&) {
    }
    for (size_t i = 1; i < args.words.size(); ++i) {
        const std::string& w = args.words[i];
        (void)parse_integer("--n", w, 0, INT64_MAX);
        (void)parse_size_list("--sizes", w);
        (void)parse_seconds("--alpha", w);
        (void)parse_rate("--bw", w);
        (void)parse_alpha_switch(w);
        (void)split_list(w);
        auto s = parse_size("--size", w);
        if (s) {
            (void)format_size(*s);
        }
    }
    return 0;
}
