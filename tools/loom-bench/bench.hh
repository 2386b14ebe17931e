// SPDX-License-Identifier: Apache-2.0
// loom-bench: collective bandwidth and latency under loomrun, its output and flags those of
// nccl-tests (all_reduce_perf and friends), so their parsers read it. One job per file:
// options.cc (command line), names.cc (nccl-tests' names), calls.cc
// (shapes and the calls), check.cc (inputs and -c), measure.cc (the timing method),
// stats.cc (percentiles), table.cc (what rank 0 prints), writers.cc (--csv, --json,
// --plot), baseline.cc (--baseline), calibrate.cc (the calibrate subcommand), main.cc (the
// sweep).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/loom.h"

namespace loom::bench {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // a loom call failed, or -c found wrong elements
constexpr int exit_bad_args = 2;  // bad command line: one line "loom-bench: <reason>"
/// Barriers before the first size (main.cc; bench/peers does the same).
constexpr int settle_barriers = 1000;
constexpr int exit_slower     = 3;  // --baseline: a point is slower than the tolerance allows

// --algo: auto (attr NULL: LOOM_ALGO, else the tuner), one NAME, or every applicable one.
enum class algo_mode { automatic, named, all };

/// How one point is timed. loop (nccl-tests' way, the default): a barrier, then ITERS calls
/// back to back between two clock readings, the mean per call on each rank, combined across
/// ranks as -a says. barrier: ITERS times a barrier and one timed call, an iteration lasting
/// from the last rank entering to the last rank leaving; time = the median, p99 beside it.
enum class timing_mode { loop, barrier };

/// -a: how the ranks' loop times become one (nccl-tests' 0/1/2/3).
enum class averaging { rank0 = 0, mean = 1, min = 2, max = 3 };

/// The progress line: on a terminal only (auto), always, or never.
enum class progress_mode { automatic, on, off };

struct options {
    loom_collective_t coll = LOOM_ALLREDUCE;
    uint64_t min_bytes     = 8;
    uint64_t max_bytes     = 64ull << 20;
    uint64_t factor        = 2;  // 1 with -i: sizes grow by step_bytes
    uint64_t step_bytes    = 0;
    int iters              = 20;
    int warmup             = 5;
    bool check             = true;
    std::vector<loom_dtype_t> dtypes{LOOM_FLOAT32};
    std::vector<loom_op_t> ops{LOOM_SUM};
    std::vector<int> roots{0};  // -r all: filled with 0..N-1 once N is known
    bool all_roots     = false;
    bool out_of_place  = true;  // the halves measured (--inplace / --outofplace: one)
    bool in_place      = true;
    timing_mode timing = timing_mode::loop;
    averaging average  = averaging::mean;
    algo_mode mode     = algo_mode::automatic;
    std::string algo;  // mode named: the name
    progress_mode progress = progress_mode::automatic;
    std::string json_path, csv_path, plot_path, baseline_path;
    double tolerance_pct = 10;
    std::string schedule_path;  // --schedule FILE: a user's schedule instead of the algorithms
    std::string command_line;   // argv as typed, for --json
    // `loom-bench calibrate [--thorough] [--json FILE]`
    bool calibrate = false;
    bool thorough  = false;
};

enum class parse_outcome { run, help, version, fail };

/// Parses argv (argv[0] is the program). On `fail`, *error holds the reason (one line); on
/// help, the text to print. Needs nothing of libloom (the fuzzer links it alone).
parse_outcome parse_options(int argc, char** argv, options* out, std::string* error);

/// "allreduce", "float" (nccl-tests' type names), "sum" … for the table and the header.
const char* collective_name(loom_collective_t c);
const char* dtype_name(loom_dtype_t d);
const char* op_name(loom_op_t op);

/// The value `text` names; false when it names none. dtypes take nccl-tests' names (float,
/// half, …) and loom's (float32, float16, …).
bool collective_named(std::string_view text, loom_collective_t* out);
bool dtype_named(std::string_view text, loom_dtype_t* out);
bool op_named(std::string_view text, loom_op_t* out);
/// Every dtype and op loom has, in nccl-tests' order (-d all, -o all).
std::vector<loom_dtype_t> all_dtypes();
std::vector<loom_op_t> all_ops();
/// The names allowed, for messages and --help.
extern const char* const collective_list;
extern const char* const dtype_list;
extern const char* const op_list;

/// Whether the primitive takes a reduction operator / a root / has an in-place form.
bool reduces(loom_collective_t c);
bool rooted(loom_collective_t c);
bool has_in_place(loom_collective_t c);

// ---- calls.cc ---------------------------------------------------------------------------

/// What every rank calls: the same on all ranks except `rank`.
struct call_spec {
    loom_collective_t coll = LOOM_ALLREDUCE;
    loom_dtype_t dtype     = LOOM_FLOAT32;
    loom_op_t op           = LOOM_SUM;
    int root               = 0;
    bool inplace           = false;
    int rank = 0, n = 1;
    size_t elem              = 4;
    loom_schedule_t schedule = nullptr;  // --schedule: loom_schedule_run instead of the call
};

/// One size: `count` is the call's count argument (loom.h conventions), `total` the
/// elements of the per-rank buffer as nccl-tests sizes it (the size and count columns).
struct shape {
    uint64_t count, total;
};

/// The two buffers, each `bytes` long, allocated once for the largest size.
struct buffers {
    void* send   = nullptr;
    void* recv   = nullptr;
    size_t bytes = 0;
};

/// Where the call reads and writes; in place, both lie in `recv` (loom.h's conventions).
struct io {
    void* in;
    void* out;
};

shape shape_for(const call_spec& c, uint64_t bytes);
/// --schedule: the one shape, from the count the schedule is written for.
shape shape_for_count(const call_spec& c, uint64_t count);
io io_for(const call_spec& c, const shape& sh, const buffers& b);
/// sendrecv: this rank sends to (rank+1)%n and receives from (rank-1+n)%n.
int send_peer(const call_spec& c);
int recv_peer(const call_spec& c);
/// One blocking call (sendrecv: a non-blocking send and receive, then both waited for).
loom_status_t call_once(loom_comm_t comm, const call_spec& c, const shape& sh, const io& p,
                        const loom_coll_attr_t* attr);
/// nccl-tests' bus-bandwidth factor.
double busbw_factor(loom_collective_t c, int n);

// ---- check.cc ---------------------------------------------------------------------------

/// Writes this rank's input (small integers, exact in every type) where the call reads it.
void fill_inputs(const call_spec& c, const shape& sh, const io& p);
/// Elements of this rank's output that differ from the exact expectation.
uint64_t count_wrong(const call_spec& c, const shape& sh, const io& p);

// ---- stats.cc ---------------------------------------------------------------------------

struct summary {
    double mean = 0, p50 = 0, p99 = 0;  // seconds
};
/// Mean, median and 99th percentile (linear interpolation between order statistics, as
/// numpy's default); sorts `times`.
summary summarize(std::vector<double>& times);

// ---- one measured point, what every output shows --------------------------------------

struct row {
    std::string collective;
    int nranks = 0;
    std::string algo;       // "" when loom cannot say (loom_comm_explain unavailable)
    int tuner_choice = -1;  // 1 / 0: is `algo` what the call would run by default; -1 unknown
    uint64_t bytes = 0, count = 0;
    std::string dtype, op;  // op "none" when the primitive does not reduce
    int root       = -1;    // -1 when the primitive has no root (as nccl-tests)
    bool inplace   = false;
    double time_us = 0;                            // the time column (see timing_mode)
    double mean_us = 0, p50_us = -1, p99_us = -1;  // p50, p99: < 0 unless timed by barrier
    double algbw = 0, busbw = 0;
    int64_t wrong       = -1;  // -1: not checked
    double predicted_us = -1;  // < 0: unknown
    double sent_bytes   = -1;  // per rank per call, max over ranks; < 0: unknown
};

// ---- measure.cc -------------------------------------------------------------------------

struct free_deleter {
    void operator()(void* p) const { std::free(p); }
};
using buffer = std::unique_ptr<void, free_deleter>;

/// One rank's run: the communicator, the call, the buffers and the time arrays (allocated
/// once, so the timed loop allocates nothing).
struct bench_state {
    options o;
    loom_comm_t comm = nullptr;
    call_spec spec;
    buffers bufs;
    buffer send, recv;
    std::vector<double> enter, leave, times;  // one per timed iteration, sized once
    std::FILE* progress     = nullptr;        // rank 0: where the progress line goes
    uint64_t schedule_count = 0;              // --schedule: the count it is written for
    std::string schedule_name;                // --schedule: "schedule:FILE", the algo column
};

// The figures of one measured point, identical on every rank (all come out of allreduces).
struct measured {
    double time_s = 0;  // the time column: loop's mean per call, or barrier's p50
    summary time;       // barrier: mean, p50, p99 over iterations; loop: mean only
    uint64_t wrong    = 0;
    double sent_bytes = -1;  // per call, max over ranks; < 0 unknown
};

/// CLOCK_MONOTONIC in seconds.
double now_s();
/// Warm-up, the timed calls (s.o.timing says how), the cross-rank reduction and (with -c)
/// one checked call, for the call `c`. With `probe`, a refusal by the first call (the same
/// on every rank: loom checks before sending) is returned as is, for the caller to skip the
/// algorithm.
loom_status_t measure(bench_state& s, const call_spec& c, const shape& sh,
                      const loom_coll_attr_t* attr, bool probe, measured* out);

// ---- table.cc ---------------------------------------------------------------------------

struct header_info {
    const options* o;
    int n;
    double memcpy_gbps;                // 0: not measured
    std::vector<std::string> devices;  // per rank: "Pid P on HOST"
    // What the tuner's figures say carries the messages ("shm", "tcp": any network): with
    // LOOM_TRANSPORT unset, loom chose the transport from where the ranks are.
    std::string carrier;
};
void print_header(const header_info& h);
/// One line: the point's out-of-place and in-place halves (either may be null: N/A), then
/// loom's columns from the first half present.
void print_row(const row* out_of_place, const row* in_place);
/// nccl-tests' closing lines: out-of-bounds values, and the bus bandwidth averaged over every
/// row and both halves.
void print_trailer(const options& o, const std::vector<row>& rows);
/// --algo all: time per size, one column per algorithm; '*' fastest, '<' the tuner's choice.
void print_comparison(const std::vector<row>& rows);
/// A one-line progress indicator ("\r[3/12] allreduce ring 1 MiB") on `to`; clear_progress
/// wipes it.
void show_progress(std::FILE* to, int done, int total, const char* coll, const std::string& algo,
                   uint64_t bytes);
void clear_progress(std::FILE* to);
std::string human_bytes(uint64_t bytes);
/// Where rank 0's progress line goes under `mode`: stderr when it is a terminal, else the
/// controlling terminal (a rank under loomrun or mpirun writes to a pipe, yet the user
/// watches a terminal) when --progress asks or the rank's stdin is a terminal or mpirun
/// started it; on: stderr when nothing else; null for none.
std::FILE* progress_stream(progress_mode mode);

// ---- writers.cc -------------------------------------------------------------------------

/// What defines the experiment, recorded by --json and compared by --baseline: two runs
/// are comparable when every field matches (the sizes, types, ops, roots and halves are per
/// point, so a grown sweep still compares).
struct experiment {
    std::string collective;
    int nranks = 0;
    std::string transport;  // as resolved: LOOM_TRANSPORT, else self (1 rank) or shm
    std::string fabric, topology, switch_address, algo_env, progress;  // LOOM_* that shape it
    std::string loom_version, timing;
    int iters = 0, warmup = 0, average = 1;
    bool check = false;
};
experiment describe_experiment(const options& o, int n);

/// The run's context for --json: the experiment, the host, the date, the command line.
struct run_info {
    experiment exp;
    std::string host, date, command_line;
};
run_info describe_run(const options& o, int n);
/// Each returns "" on success, else the reason (one line).
std::string write_csv(const std::string& path, const std::vector<row>& rows);
std::string write_json(const std::string& path, const run_info& info, const std::vector<row>& rows);
/// Writes PATH.gp (the script, data inline) next to the PNG and runs gnuplot; a missing
/// gnuplot is a warning (returned in *warning), not an error.
std::string write_plot(const std::string& png, const options& o, int n,
                       const std::vector<row>& rows, std::string* warning);
/// Whether each output file (--csv, --json, --plot and its .gp) can be written: "" when
/// all can, else the first reason. Creates nothing that was not there.
std::string check_output_paths(const options& o);

// ---- baseline.cc ------------------------------------------------------------------------

struct baseline_point {
    std::string collective, algo, dtype, op;
    int root     = -1;
    bool inplace = false;
    uint64_t bytes;
    double time_us;
};
struct baseline {
    experiment exp;
    std::vector<baseline_point> points;
};
/// Reads a --json file; "" on success, else the reason.
std::string load_baseline(const std::string& path, baseline* out);
/// The same for the file's text (`path` only names it in the reason).
std::string parse_baseline(std::string_view text, const std::string& path, baseline* out);
/// "" when this run (`now`, the types and ops it will measure) is the baseline's experiment;
/// else the reason, naming the first difference.
std::string baseline_mismatch(const baseline& base, const experiment& now, const options& o);
/// Prints the comparison (when `print`) and returns exit_slower when a point is slower than
/// tolerance_pct allows, else exit_ok.
int compare_baseline(const baseline& base, const std::vector<row>& rows, double tolerance_pct,
                     bool print);

// ---- calibrate.cc -----------------------------------------------------------------------

int run_calibrate(const options& o);

}  // namespace loom::bench
