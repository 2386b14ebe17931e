// loom-bench: collective bandwidth and latency under loomrun, modelled on nccl-tests
// (all_reduce_perf and friends). One job per file: options.cc (command line), calls.cc
// (shapes and the calls), check.cc (inputs and -c), measure.cc (the timing method),
// stats.cc (percentiles), table.cc (what rank 0 prints), writers.cc (--csv, --json,
// --plot), baseline.cc (--baseline), calibrate.cc (the calibrate subcommand), main.cc (the
// sweep).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
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

struct options {
    loom_collective_t coll = LOOM_ALLREDUCE;
    uint64_t min_bytes     = 8;
    uint64_t max_bytes     = 64ull << 20;
    uint64_t factor        = 2;
    int iters              = 20;
    int warmup             = 5;
    bool check             = false;
    loom_dtype_t dtype     = LOOM_FLOAT32;
    loom_op_t op           = LOOM_SUM;
    int root               = 0;
    algo_mode mode         = algo_mode::automatic;
    std::string algo;  // mode named: the name
    bool inplace = false;
    bool quiet   = false;
    std::string json_path, csv_path, plot_path, baseline_path;
    double tolerance_pct = 10;
    // `loom-bench calibrate [--thorough] [--json FILE]`
    bool calibrate = false;
    bool thorough  = false;
};

enum class parse_outcome { run, help, fail };

/// Parses argv (argv[0] is the program). On `fail`, *error holds the reason (one line).
parse_outcome parse_options(int argc, char** argv, options* out, std::string* error);

/// The usage text printed by --help.
const char* usage_text();

/// "allreduce", "float32", "sum" … for the table and the header.
const char* collective_name(loom_collective_t c);
const char* dtype_name(loom_dtype_t d);
const char* op_name(loom_op_t op);

/// Whether the primitive takes a reduction operator / a root.
bool reduces(loom_collective_t c);
bool rooted(loom_collective_t c);

// ---- calls.cc ---------------------------------------------------------------------------

/// What every rank calls: the same on all ranks except `rank`.
struct call_spec {
    loom_collective_t coll = LOOM_ALLREDUCE;
    loom_dtype_t dtype     = LOOM_FLOAT32;
    loom_op_t op           = LOOM_SUM;
    int root               = 0;
    bool inplace           = false;
    int rank = 0, n = 1;
    size_t elem = 4;
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
    double mean_us = 0, p50_us = 0, p99_us = 0, algbw = 0, busbw = 0;
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
    bool progress = false;                    // rank 0 with a terminal on stderr
};

// The figures of one measured point, identical on every rank (all come out of allreduces).
struct measured {
    summary time;
    uint64_t wrong    = 0;
    double sent_bytes = -1;  // per call, max over ranks; < 0 unknown
};

/// CLOCK_MONOTONIC in seconds.
double now_s();
/// Warm-up, the timed loop, the cross-rank reduction and (with -c) one checked call. With
/// `probe`, a refusal by the first call (the same on every rank: loom checks before sending)
/// is returned as is, for the caller to skip the algorithm.
loom_status_t measure(bench_state& s, const shape& sh, const loom_coll_attr_t* attr, bool probe,
                      measured* out);

// ---- table.cc ---------------------------------------------------------------------------

struct header_info {
    const options* o;
    int n;
    double memcpy_gbps;  // 0: not measured
};
void print_header(const header_info& h);
void print_row(const row& r);
/// --algo all: p50 per size, one column per algorithm; '*' fastest, '<' the tuner's choice.
void print_comparison(const std::vector<row>& rows);
/// A one-line progress indicator on stderr ("\r[3/12] allreduce ring 1 MiB"); clear_progress
/// wipes it. Callers decide whether stderr is a terminal.
void show_progress(int done, int total, const char* coll, const std::string& algo, uint64_t bytes);
void clear_progress();
std::string human_bytes(uint64_t bytes);

// ---- writers.cc -------------------------------------------------------------------------

/// The run's context for --json: LOOM_TRANSPORT (or ""), the host, the date.
struct run_info {
    std::string collective;
    int nranks = 0;
    std::string transport, host, date;
};
run_info describe_run(const options& o, int n);
/// Each returns "" on success, else the reason (one line).
std::string write_csv(const std::string& path, const std::vector<row>& rows);
std::string write_json(const std::string& path, const run_info& info, const std::vector<row>& rows);
/// Writes PATH.gp and PATH.dat next to the PNG and runs gnuplot; a missing gnuplot is a
/// warning (returned in *warning), not an error.
std::string write_plot(const std::string& png, const std::vector<row>& rows, std::string* warning);

// ---- baseline.cc ------------------------------------------------------------------------

struct baseline_point {
    std::string collective, algo;
    uint64_t bytes;
    double p50_us;
};
/// Reads a --json file; "" on success, else the reason.
std::string load_baseline(const std::string& path, std::vector<baseline_point>* out);
/// The same for the file's text (`path` only names it in the reason).
std::string parse_baseline(std::string_view text, const std::string& path,
                           std::vector<baseline_point>* out);
/// Prints the comparison (when `print`) and returns exit_slower when a point is slower than
/// tolerance_pct allows, else exit_ok.
int compare_baseline(const std::vector<baseline_point>& base, const std::vector<row>& rows,
                     double tolerance_pct, bool print);

// ---- calibrate.cc -----------------------------------------------------------------------

int run_calibrate(const options& o);

}  // namespace loom::bench
