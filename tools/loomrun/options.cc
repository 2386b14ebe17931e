// SPDX-License-Identifier: Apache-2.0
// loomrun's command line. Flags are bound as strings and checked here, so each kind of bad
// input gets one line that says what is allowed (docs/architecture.md#conventions).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "loomrun.hh"
#include "topology/fabric.hh"
#include "topology/topology.hh"

namespace loom::loomrun {
namespace {

constexpr int max_ranks = 4096;  // a local launcher: more processes than this is a typo

result<int> parse_ranks(const std::string& text) {
    char* end = nullptr;
    long n    = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || n < 1 || n > max_ranks) {
        return invalid_argument("-n '" + text + "': the number of ranks must be an integer in 1.." +
                                std::to_string(max_ranks));
    }
    return static_cast<int>(n);
}

parsed fail(std::string reason) {
    parsed p;
    p.what = parsed::action::fail;
    p.text = std::move(reason);
    return p;
}

}  // namespace

result<double> parse_duration(const std::string& flag, const std::string& text) {
    char* end    = nullptr;
    double value = std::strtod(text.c_str(), &end);
    std::string_view unit(end);
    double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
    if (text.empty() || end == text.c_str() || scale == 0 || !std::isfinite(value) ||
        !(value > 0)) {
        return invalid_argument(flag + " '" + text +
                                "': expected a positive number of seconds, optionally with "
                                "s, m or h");
    }
    return value * scale;
}

namespace {

// Flags CLI11 keeps as text, checked afterwards with messages of our own.
struct flag_text {
    std::string ranks, timeout, grace;
};

void add_flags(CLI::App& app, options& o, flag_text& text) {
    app.add_option("-n,--ranks", text.ranks,
                   "number of ranks to start (1.." + std::to_string(max_ranks) + ")");
    app.add_option("--transport", o.transport,
                   "LOOM_TRANSPORT of every rank: shm, tcp, ofi, verbs, dpdk, self (-n 1) or "
                   "fault:<transport>; default: LOOM_TRANSPORT of loomrun's environment, else "
                   "shm; under --hosts netns unset, so the ranks, on several hosts, pick a "
                   "network transport themselves (tcp under --fabric)")
        ->check(CLI::Validator(
            [](const std::string& t) {
                std::string_view inner = t;
                while (inner.starts_with("fault:")) {
                    inner.remove_prefix(6);
                }
                return known_transport(inner)
                           ? std::string()
                           : t + " not in {" + known_transports + ", fault:<transport>}";
            },
            "TRANSPORT"));
    app.add_option("--fabric", o.fabric,
                   "SHAPE (torus:2x2x2, mesh:3x3, ring:8; its size must equal -n): every rank "
                   "gets LOOM_FABRIC=SHAPE, LOOM_TRANSPORT=fwd:<--transport> and "
                   "LOOM_PROGRESS=thread, so messages travel hop by hop between neighbours; "
                   "with --switch also star:N or a fabric file (aggregation tree)");
    app.add_flag("--switch", o.with_switch,
                 "start loom-switch aggregation node(s) and point the ranks at them (LOOM_SWITCH): "
                 "one for every rank, or with --fabric FILE.json one per in-network switch of "
                 "the file, each told its parent; in-network allreduce/reduce/broadcast ('inc') "
                 "then run through them");
    app.add_flag("--dpu", o.dpu,
                 "with --fabric SHAPE: start one loom-dpu (the DPU's router, DPDK memif ports) "
                 "per node, wired as SHAPE, and run every rank over transport dpu attached to "
                 "its own DPU; the DPUs' per-link statistics are printed after the job");
    app.add_flag("--inc", o.dpu_inc,
                 "with --dpu: every DPU is also an in-network aggregation node (loom-dpu "
                 "--aggregate: a leaf for its node's ranks, node 0's DPU the root too); the ranks "
                 "get LOOM_SWITCH, LOOM_SWITCH_FABRIC (the tree) and LOOM_INC_TICKET, so 'inc' "
                 "allreduce/reduce/broadcast run through the DPUs");
    app.add_option("--dpu-arg", o.dpu_args,
                   "with --dpu: one more argument for every loom-dpu (repeat the flag for each "
                   "word: --dpu-arg=--drop --dpu-arg=0.01)")
        ->allow_extra_args(false);
    app.add_flag("--link-stats", o.link_stats,
                 "with --fabric: print each rank's per-link traffic after the job (the "
                 "communicators write it at loom_comm_destroy into LOOM_LINK_STATS_DIR)");
    app.add_option("--timeout", text.timeout,
                   "end every rank and exit 124 after this long (seconds, or with s/m/h)");
    app.add_option("--hosts", o.hosts,
                   "local: ranks share this host's network; netns (root): one network "
                   "namespace per rank, 10.77.0.(rank+1)/24 over a bridge")
        ->check(CLI::IsMember({"local", "netns"}));
    app.add_option("--grace", text.grace,
                   "how long ranks get between SIGTERM and SIGKILL when a job ends (default 2 s)");
    app.add_flag("--config", o.show_config,
                 "print every LOOM_* parameter: value, default, unit, description");
    app.add_flag("--markdown", o.show_markdown,
                 "with --config: print the parameters as the README's environment table");
    app.add_flag("--version", o.show_version, "print the version and build features");
    app.add_flag("--tag-output,!--no-tag-output", o.tag_output,
                 "prefix each line a rank writes with \"[rank] \" (the default); "
                 "--no-tag-output passes lines on bare, as mpirun does, for parsers of the "
                 "program's own output (nccl-tests' for loom-bench)");
    app.footer(
        "Usage: loomrun -n N [flags] -- PROGRAM ARGS\n"
        "Each rank gets LOOM_RANK, LOOM_SIZE, LOOM_JOB, LOOM_BOOTSTRAP and LOOM_TRANSPORT (and\n"
        "LOOM_TCP_ADDR and LOOM_OFI_ADDR under --hosts netns, where LOOM_TRANSPORT stays unset\n"
        "unless given); its output lines are prefixed with \"[rank] \" (--no-tag-output:\n"
        "bare lines, whole lines never interleaved).\n"
        "LOOM_TRANSPORT, LOOM_BOOTSTRAP, LOOM_JOB_SECRET, LOOM_TCP_ADDR, LOOM_OFI_ADDR and\n"
        "LOOM_JOB set in loomrun's environment win over its defaults; a setting that cannot\n"
        "work with the flags given is refused (LOOM_LOG_LEVEL=info shows what the job uses\n"
        "and why).\n"
        "Exit status: 0 all ranks succeeded; else the first failing rank's status (128+signal\n"
        "when killed); 124 timeout; 2 bad command line; 1 loomrun could not start the job.");
}

// The checks CLI11 does not make: -n, durations, a program to run.
parsed check(parsed out, const flag_text& text) {
    options& o = out.opts;
    if (o.show_markdown && !o.show_config) {
        return fail("--markdown goes with --config (loomrun --config --markdown)");
    }
    if (o.show_config || o.show_version) {
        out.what = parsed::action::run;
        return out;
    }
    if (text.ranks.empty()) {
        return fail("-n N is required (loomrun -n N -- PROGRAM ARGS)");
    }
    auto ranks = parse_ranks(text.ranks);
    if (!ranks) {
        return fail(ranks.error().message());
    }
    o.ranks = *ranks;
    for (auto [flag, value_text, value] : {std::tuple{"--timeout", &text.timeout, &o.timeout_s},
                                           std::tuple{"--grace", &text.grace, &o.grace_s}}) {
        if (!value_text->empty()) {
            auto seconds = parse_duration(flag, *value_text);
            if (!seconds) {
                return fail(seconds.error().message());
            }
            *value = *seconds;
        }
    }
    int fabric_ranks = o.ranks;
    if (!o.fabric.empty() && topology::names_fabric_file(o.fabric)) {
        auto f = topology::load_fabric_file(o.fabric);
        if (!f) {
            return fail("--fabric: " + f.error().message());
        }
        if (!o.with_switch) {
            return fail("--fabric " + o.fabric +
                        ": a fabric file places aggregation switches and goes with --switch "
                        "(without it, --fabric takes a lattice: torus:AxB…, mesh:AxB…, ring:N)");
        }
        fabric_ranks = f->nranks();
    } else if (!o.fabric.empty()) {
        auto shape = topology::shape::parse(o.fabric);
        if (!shape) {
            return fail("--fabric '" + o.fabric + "': " + shape.error().message());
        }
        if (!shape->is_lattice() && !(o.with_switch && shape->type() == topology::kind::star)) {
            return fail("--fabric '" + o.fabric +
                        "': expected a lattice (torus:AxB…, mesh:AxB…, ring:N)");
        }
        fabric_ranks = shape->size();
    }
    if (fabric_ranks != o.ranks) {
        return fail("--fabric '" + o.fabric + "' has " + std::to_string(fabric_ranks) +
                    " ranks but -n is " + std::to_string(o.ranks) + ": they must be equal");
    }
    if (o.dpu) {
        if (o.fabric.empty() || topology::names_fabric_file(o.fabric)) {
            return fail(
                "--dpu needs --fabric SHAPE (torus:AxB…, mesh:AxB…, ring:N): the wiring "
                "of the DPUs");
        }
        if (o.with_switch || o.link_stats) {
            return fail(
                "--dpu goes with neither --switch nor --link-stats (the DPUs print "
                "their own link statistics)");
        }
        if (!o.transport.empty() && o.transport != "dpu") {
            return fail("--dpu runs the ranks over transport dpu, not --transport " + o.transport);
        }
        o.transport = "dpu";
    } else if (o.dpu_inc || !o.dpu_args.empty()) {
        return fail("--inc and --dpu-arg go with --dpu");
    }
    if (o.link_stats && o.fabric.empty()) {
        return fail("--link-stats needs --fabric SHAPE (link counters exist only over fwd:)");
    }
    if (o.command.empty()) {
        return fail("no program given (loomrun -n N -- PROGRAM ARGS)");
    }
    out.what = parsed::action::run;
    return out;
}

}  // namespace

parsed parse_options(int argc, const char* const* argv) {
    // Everything after "--" is the program and its arguments, untouched by CLI11.
    int split = argc;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--") {
            split = i;
            break;
        }
    }
    CLI::App app{"Start N loom ranks on this host (or in network namespaces) and watch them.",
                 "loomrun"};
    parsed out;
    flag_text text;
    add_flags(app, out.opts, text);
    if (split == argc) {
        app.prefix_command();  // no "--": the first non-flag word starts the program
    }
    try {
        app.parse(split, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {  // --help
            out.what = parsed::action::print;
            out.text = app.help();
            return out;
        }
        return fail(e.what());
    }
    if (split < argc) {
        out.opts.command.assign(argv + split + 1, argv + argc);
    } else {
        out.opts.command = app.remaining();
    }
    return check(std::move(out), text);
}

}  // namespace loom::loomrun
