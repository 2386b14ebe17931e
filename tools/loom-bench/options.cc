// SPDX-License-Identifier: Apache-2.0
// loom-bench's command line, nccl-tests' flags: `loom-bench COLLECTIVE [flags]`. CLI11
// splits it (as in loom-sim, loomrun and loom-switch); every value is kept as text and
// checked here, so each kind of bad input gets one line saying what is allowed.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>

#include "bench.hh"
#include "tools/common/size_grammar.hh"

namespace loom::bench {
namespace {

constexpr uint64_t max_size = 1ull << 40;  // 1 TiB: far beyond memory, short of overflow

std::string footer_text() {
    return std::string(
               "Usage: loomrun -n N [--transport shm|tcp] -- loom-bench COLLECTIVE [flags]\n"
               "       loomrun -n N -- loom-bench calibrate [--thorough] [--json FILE]\n"
               "Collectives: allreduce, broadcast, reduce, reduce_scatter, allgather, alltoall,\n"
               "sendrecv (rank r sends to r+1 and receives from r-1, modulo N).\n"
               "Output: nccl-tests' header and 13 columns (size count type redop root, then time "
               "algbw\n"
               "busbw #wrong out of place and in place), then loom's: algo, pred (loom's "
               "predicted\n"
               "time), p99 (--timing barrier) and sent (bytes a rank handed its transport per "
               "call, the\n"
               "maximum over ranks); '-' or N/A where there is none. The trailer: out-of-bounds "
               "values\n"
               "and the bus bandwidth averaged over every row and both halves, as nccl-tests.\n"
               "Sizes are bytes of the per-rank buffer (SIZE: ") +
           tools::size_grammar_help +
           "); reduce_scatter, allgather and alltoall round the element count down to a multiple\n"
           "of N. busbw = algbw x 2(N-1)/N (allreduce), (N-1)/N (reduce_scatter, allgather,\n"
           "alltoall), 1 (broadcast, reduce, sendrecv). GB/s is 10^9 bytes per second.\n"
           "nccl-tests flags that do not apply: -t (threads: one rank per process here), -g "
           "(GPUs:\n"
           "loom runs on CPUs; -g 1 is accepted), -G (CUDA graphs; -G 0 accepted), -m above 1 "
           "(loom\n"
           "has no grouped calls), -p (parallel init), -C (report cputime: the time is wall "
           "time).\n"
           "Exit status: 0 ok; 1 a call failed or -c found wrong elements; 2 bad arguments (or a\n"
           "--baseline of another experiment); 3 --baseline found a slower point.";
}

// Every flag's text as typed; checked after CLI11 has split the line.
struct flag_text {
    std::string collective, b = "8", e = "64M", f, i, n, w, c, d = "float", o = "sum", r, m, a, z,
                            t, g, graph, algo, timing, tolerance;
    bool inplace = false, outofplace = false, progress = false, no_progress = false;
};

bool parse_int(std::string_view text, long lo, long hi, long* out) {
    if (text.empty() || text.size() > 18) {
        return false;
    }
    std::string s(text);
    char* end = nullptr;
    errno     = 0;
    long v    = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

// "a,b" or "all" through `named` (dtype_named, op_named) into *out.
template <class T>
bool parse_list(const std::string& text, bool (*named)(std::string_view, T*),
                std::vector<T> (*every)(), std::vector<T>* out) {
    if (text == "all") {
        *out = every();
        return true;
    }
    out->clear();
    size_t at = 0;
    while (at <= text.size()) {
        size_t comma          = text.find(',', at);
        std::string_view item = std::string_view(text).substr(
            at, comma == std::string::npos ? std::string::npos : comma - at);
        T value{};
        if (!named(item, &value)) {
            return false;
        }
        out->push_back(value);
        if (comma == std::string::npos) {
            break;
        }
        at = comma + 1;
    }
    return !out->empty();
}

std::string joined(int argc, char** argv) {
    std::string line;
    for (int i = 0; i < argc; ++i) {
        line += (i ? " " : "") + std::string(argv[i]);
    }
    return line;
}

void add_flags(CLI::App& app, flag_text& t, options& o) {
    std::string size_help = std::string("SIZE: ") + tools::size_grammar_help;
    app.add_option("collective", t.collective, std::string("what to measure: ") + collective_list);
    app.add_option("-b,--minbytes", t.b, "smallest size (default 8; " + size_help + ")");
    app.add_option("-e,--maxbytes", t.e, "largest size (default 64M)");
    app.add_option("-f,--stepfactor", t.f, "multiply the size by F (integer >= 2, default 2)");
    app.add_option("-i,--stepbytes", t.i, "add SIZE to the size instead (linear steps)");
    app.add_option("-n,--iters", t.n, "timed calls per size (default 20)");
    app.add_option("-w,--warmup_iters", t.w, "untimed calls per size first (default 5)");
    app.add_option("-m,--agg_iters", t.m, "calls aggregated per timed step: 1 only (see below)");
    app.add_option("-c,--check", t.c, "0|1: check every result exactly (default 1); -c alone is 1")
        ->expected(0, 1);
    app.add_option("-d,--datatype,--dtype", t.d, std::string("TYPE[,TYPE…]: ") + dtype_list);
    app.add_option("-o,--op", t.o, std::string("OP[,OP…] of the reductions: ") + op_list);
    app.add_option("-r,--root", t.r, "root of broadcast and reduce (default 0), or all");
    app.add_option("-a,--average", t.a,
                   "0|1|2|3: the time of rank 0, the mean, min or max over ranks (default 1)");
    app.add_option("-z,--blocking", t.z, "0|1: loom's calls return complete either way");
    app.add_option("-t,--nthreads", t.t, "threads per process: 1 only");
    app.add_option("-g,--ngpus", t.g, "GPUs per thread: 1 only (loom runs on CPUs)");
    app.add_option("-G,--cudagraph", t.graph, "CUDA graph launches: 0 only (no CUDA in loom)");
    app.add_option("--schedule", o.schedule_path,
                   "FILE: run this schedule (text or JSON, as loom-sim verify takes it) instead "
                   "of loom's algorithms, at the one size it is written for; verified first");
    app.add_option("--algo", t.algo,
                   "auto (default): LOOM_ALGO, else the tuner; NAME: that algorithm; all: every "
                   "applicable one, then a table");
    app.add_option("--timing", t.timing,
                   "loop (default): ITERS calls back to back, the mean per call, as nccl-tests; "
                   "barrier: a barrier and one call per iteration, time = p50, p99 beside it");
    app.add_flag("--inplace", t.inplace, "measure only the in-place half");
    app.add_flag("--outofplace", t.outofplace, "measure only the out-of-place half");
    app.add_option("--csv", o.csv_path, "FILE: one row per measured point and half (rank 0)");
    app.add_option("--json", o.json_path,
                   "FILE: the experiment and its rows as JSON (also a --baseline file)");
    app.add_option("--plot", o.plot_path, "FILE.png: time against size, log-log, via gnuplot");
    app.add_option("--baseline", o.baseline_path,
                   "FILE: compare with an earlier --json of the same experiment; exit 3 when a "
                   "point is slower by more than the tolerance, 2 when the experiment differs");
    app.add_option("--tolerance", t.tolerance, "PCT for --baseline (default 10)");
    app.add_flag("--progress", t.progress,
                 "always show the progress line (rank 0; on the terminal when it can be opened)");
    app.add_flag("--no-progress,--quiet", t.no_progress, "never show the progress line");
}

// The checks CLI11 does not make. "" when the flags hold, else the reason.
std::string check(flag_text& t, const CLI::App& app, options& o) {
    auto bad = [](const char* flag, const std::string& value, const std::string& expected) {
        return std::string(flag) + " '" + value + "': expected " + expected;
    };
    if (t.collective.empty()) {
        return std::string("a collective is required (") + collective_list + ")";
    }
    if (!collective_named(t.collective, &o.coll)) {
        return "unknown collective '" + t.collective + "' (allowed: " + collective_list + ")";
    }
    for (auto [flag, text, value] :
         {std::tuple{"-b", &t.b, &o.min_bytes}, std::tuple{"-e", &t.e, &o.max_bytes}}) {
        auto size = tools::parse_size(flag, *text);
        if (!size) {
            return size.error().message();
        }
        if (static_cast<uint64_t>(*size) > max_size) {
            return std::string(flag) + " '" + *text + "': at most 1T";
        }
        *value = static_cast<uint64_t>(*size);
    }
    long number = 0;
    if (!t.i.empty()) {
        auto step = tools::parse_size("-i", t.i);
        if (!step) {
            return step.error().message();
        }
        if (*step <= 0 || static_cast<uint64_t>(*step) > max_size) {
            return bad("-i", t.i, "a step of 1 byte to 1T");
        }
        if (!t.f.empty()) {
            return "-i (linear steps) and -f (a factor) exclude each other";
        }
        o.step_bytes = static_cast<uint64_t>(*step);
        o.factor     = 1;
    } else if (!t.f.empty()) {
        if (!parse_int(t.f, 2, 1 << 20, &number)) {
            return bad("-f", t.f, "an integer factor >= 2 (or -i SIZE for linear steps)");
        }
        o.factor = static_cast<uint64_t>(number);
    }
    if (!t.n.empty()) {
        if (!parse_int(t.n, 1, 1 << 24, &number)) {
            return bad("-n", t.n, "a number of iterations from 1 to 16777216");
        }
        o.iters = static_cast<int>(number);
    }
    if (!t.w.empty()) {
        if (!parse_int(t.w, 0, 1 << 30, &number)) {
            return bad("-w", t.w, "a number of iterations >= 0");
        }
        o.warmup = static_cast<int>(number);
    }
    if (!t.m.empty() && t.m != "1") {
        return bad("-m", t.m,
                   "1 (loom has no grouped calls to aggregate: each call completes before the "
                   "next starts)");
    }
    if (app.count("-c") > 0) {
        if (t.c.empty()) {
            t.c = "1";
        }
        if (t.c != "0" && t.c != "1") {
            return bad("-c", t.c, "0 or 1");
        }
        o.check = t.c == "1";
    }
    if (!parse_list(t.d, dtype_named, all_dtypes, &o.dtypes)) {
        return bad("-d", t.d, std::string("one of ") + dtype_list);
    }
    if (!parse_list(t.o, op_named, all_ops, &o.ops)) {
        return bad("-o", t.o, std::string("one of ") + op_list);
    }
    if (!reduces(o.coll)) {
        o.ops = {LOOM_SUM};  // not printed: the column says none, as nccl-tests
    }
    if (!t.r.empty()) {
        if (!rooted(o.coll)) {
            return std::string("-r applies to broadcast and reduce, not ") +
                   collective_name(o.coll);
        }
        if (t.r == "all") {
            o.all_roots = true;
        } else if (!parse_int(t.r, 0, 1 << 30, &number)) {
            return bad("-r", t.r, "a rank >= 0, or all");
        } else {
            o.roots = {static_cast<int>(number)};
        }
    }
    if (!rooted(o.coll)) {
        o.roots = {-1};
    }
    if (!t.a.empty()) {
        if (!parse_int(t.a, 0, 3, &number)) {
            return bad("-a", t.a, "0 (rank 0), 1 (mean), 2 (min) or 3 (max)");
        }
        o.average = static_cast<averaging>(number);
    }
    if (!t.z.empty() && t.z != "0" && t.z != "1") {
        return bad("-z", t.z, "0 or 1");
    }
    if (!t.t.empty() && t.t != "1") {
        return bad("-t", t.t, "1 (one rank per process: start more ranks with loomrun -n)");
    }
    if (!t.g.empty() && t.g != "1") {
        return bad("-g", t.g, "1 (loom runs on CPUs: one rank per process)");
    }
    if (!t.graph.empty() && t.graph != "0") {
        return bad("-G", t.graph, "0 (CUDA graphs do not apply: loom has no CUDA code)");
    }
    if (!t.algo.empty()) {
        if (t.algo.find_first_of(" \t;=") != std::string::npos) {
            return bad("--algo", t.algo,
                       "auto, all or an algorithm name (loom-sim algorithms lists them)");
        }
        o.mode = t.algo == "auto"  ? algo_mode::automatic
                 : t.algo == "all" ? algo_mode::all
                                   : algo_mode::named;
        o.algo = o.mode == algo_mode::named ? t.algo : std::string();
    }
    if (!t.timing.empty()) {
        if (t.timing != "loop" && t.timing != "barrier") {
            return bad("--timing", t.timing, "loop or barrier");
        }
        o.timing = t.timing == "loop" ? timing_mode::loop : timing_mode::barrier;
    }
    if (t.inplace && t.outofplace) {
        return "--inplace and --outofplace exclude each other (neither: both halves)";
    }
    if (t.inplace && !has_in_place(o.coll)) {
        return "--inplace: loom has no in-place send/recv (the send would race the receive)";
    }
    o.in_place     = !t.outofplace && has_in_place(o.coll);
    o.out_of_place = !t.inplace;
    if (t.progress && t.no_progress) {
        return "--progress and --no-progress exclude each other";
    }
    o.progress = t.progress      ? progress_mode::on
                 : t.no_progress ? progress_mode::off
                                 : progress_mode::automatic;
    for (auto [flag, path] :
         {std::pair{"--csv", &o.csv_path}, std::pair{"--json", &o.json_path},
          std::pair{"--plot", &o.plot_path}, std::pair{"--baseline", &o.baseline_path}}) {
        if (app.count(flag) > 0 && path->empty()) {
            return std::string(flag) + " '': expected a file name";
        }
    }
    if (!o.plot_path.empty() &&
        (o.plot_path.size() < 5 || o.plot_path.substr(o.plot_path.size() - 4) != ".png")) {
        return bad("--plot", o.plot_path, "a file name ending in .png");
    }
    if (!t.tolerance.empty()) {
        char* end  = nullptr;
        double pct = std::strtod(t.tolerance.c_str(), &end);
        if (*end != '\0' || !(pct >= 0 && pct <= 1e6)) {
            return bad("--tolerance", t.tolerance, "a percentage >= 0 (e.g. 10)");
        }
        if (o.baseline_path.empty()) {
            return "--tolerance applies to --baseline FILE";
        }
        o.tolerance_pct = pct;
    }
    if (app.count("--schedule") > 0) {
        if (o.schedule_path.empty()) {
            return "--schedule '': expected a file name";
        }
        // The schedule states the call: its count (so the one size), its root and the
        // algorithm it is.
        for (const char* flag : {"-b", "-e", "-f", "-i", "-r", "--algo"}) {
            if (app.count(flag) > 0) {
                return std::string("--schedule FILE fixes the size, root and algorithm: drop ") +
                       flag;
            }
        }
        if (o.coll == LOOM_SENDRECV) {
            return "--schedule runs the collectives; sendrecv's ring of pairs is not one "
                   "schedule's single transfer";
        }
    }
    if (o.min_bytes == 0) {
        return "-b must be at least 1 byte";
    }
    if (o.min_bytes > o.max_bytes) {
        return "-b " + std::to_string(o.min_bytes) + " is larger than -e " +
               std::to_string(o.max_bytes);
    }
    return "";
}

// `loom-bench calibrate [--thorough] [--json FILE]`: argv[1] is "calibrate".
parse_outcome parse_calibrate(int argc, char** argv, options* out, std::string* error) {
    options o;
    o.calibrate = true;
    CLI::App app{
        "loom-bench calibrate: measures alpha, BW and the reduction throughput "
        "(loom_comm_calibrate); rank 0 prints them.",
        "loom-bench calibrate"};
    app.add_flag("--thorough", o.thorough, "the full pass");
    app.add_option("--json", o.json_path, "FILE: also write the figures as JSON");
    try {
        app.parse(argc - 1, argv + 1);
    } catch (const CLI::CallForHelp&) {
        *error = app.help();
        return parse_outcome::help;
    } catch (const CLI::ParseError& e) {
        *error = std::string("calibrate: ") + e.what() + " (allowed: --thorough, --json FILE)";
        return parse_outcome::fail;
    }
    if (app.count("--json") > 0 && o.json_path.empty()) {
        *error = "calibrate: --json needs a file name";
        return parse_outcome::fail;
    }
    *out = o;
    return parse_outcome::run;
}

}  // namespace

parse_outcome parse_options(int argc, char** argv, options* out, std::string* error) {
    if (argc >= 2 && std::string_view(argv[1]) == "calibrate") {
        return parse_calibrate(argc, argv, out, error);
    }
    options o;
    flag_text t;
    CLI::App app{
        "loom-bench: bandwidth and latency of loom's collectives, as nccl-tests "
        "measures and prints them.",
        "loom-bench"};
    bool version = false;
    app.add_flag("--version", version, "print the version and build features");
    add_flags(app, t, o);
    app.footer(footer_text());
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        *error = app.help();
        return parse_outcome::help;
    } catch (const CLI::ParseError& e) {
        *error = e.what();
        return parse_outcome::fail;
    }
    if (version) {
        return parse_outcome::version;
    }
    if (std::string reason = check(t, app, o); !reason.empty()) {
        *error = reason;
        return parse_outcome::fail;
    }
    o.command_line = joined(argc, argv);
    *out           = o;
    return parse_outcome::run;
}

}  // namespace loom::bench
