// SPDX-License-Identifier: Apache-2.0
// loom-sim: what the tool's files share (docs/architecture.md#rule-thin-mains: main.cc +
// options.cc).
//
// main.cc wires the verbs into CLI11 and turns a verb's status into the exit status and the
// one line on stderr; options.cc turns flag text (sizes, times, rates, names, topologies)
// into library values; verbs_*.cc hold the verbs. A verb only parses, calls algorithms:: and
// schedule:: and prints: every number it shows comes from the library
// (docs/architecture.md#rule-step-vocabulary, docs/architecture.md#rule-algorithm-files).
//
// Every flag is bound as a string and parsed here rather than by CLI11's converters, so that
// each kind of bad input gets one message that says what is allowed
// (docs/architecture.md#conventions: a one-line reason on stderr, never an exception trace).
#pragma once

#include <loom/loom.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hh"
#include "schedule/verifier.hh"
#include "sim/sim.hh"
#include "tuner/calibration.hh"
#include "tuner/tuner_params.hh"

namespace loom::sim_tool {

/// Exit statuses: 1 is kept for "the schedule is wrong" so scripts can tell it from misuse.
constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // verify: the schedule failed verification
constexpr int exit_bad_args = 2;  // anything else: bad flags, unreadable input, not applicable

/// A verb: its CLI11 subcommand and what runs when it is the one selected.
struct verb {
    CLI::App* command = nullptr;
    std::function<status()> run;
};

void add_catalogue_verbs(CLI::App& app, std::vector<verb>& verbs);  // algorithms
void add_schedule_verbs(CLI::App& app, std::vector<verb>& verbs);   // schedule, verify
void add_predict_verbs(CLI::App& app, std::vector<verb>& verbs);    // predict, overview
void add_run_verbs(CLI::App& app, std::vector<verb>& verbs);        // run (fabric/sim)
void add_topology_verbs(CLI::App& app, std::vector<verb>& verbs);   // topology
void add_compare_verbs(CLI::App& app, std::vector<verb>& verbs);    // compare
void add_explain_verbs(CLI::App& app, std::vector<verb>& verbs);    // explain

// ---- value parsers (options.cc); `flag` names the option in the message -----------------

/// An integer in [lo, hi]; no suffixes.
result<int64_t> parse_integer(std::string_view flag, std::string_view text, int64_t lo, int64_t hi);
/// A size: plain number, K/M/G/T binary (1024-based, as nccl-tests; KiB… too), KB/MB/GB/TB
/// decimal, an optional trailing B. Whole and non-negative.
result<int64_t> parse_size(std::string_view flag, std::string_view text);
/// A comma list of sizes ("1K,1M,1G").
result<std::vector<int64_t>> parse_size_list(std::string_view flag, std::string_view text);
/// Seconds: plain, or with s/ms/us/µs/ns. Non-negative and finite.
result<double> parse_seconds(std::string_view flag, std::string_view text);
/// Bytes per second: plain, or with B/s, KB/s, MB/s, GB/s, TB/s (decimal), KiB/s … (binary),
/// Kbit/s … or Gbps (bits); the "/s" may be left out. Positive and finite.
result<double> parse_rate(std::string_view flag, std::string_view text);
/// --alpha-switch: empty (not given) is -1, "unset: the aggregation node's hops cost α"
/// (sim::fabric::alpha_switch_s, algorithms::cost::time_s); else seconds as parse_seconds.
result<double> parse_alpha_switch(std::string_view text);
/// ", α_switch = 0.15 µs" when set (≥ 0), else "": for the printed model lines.
std::string alpha_switch_text(double alpha_switch_s);
/// The --alpha-switch option on a verb that has --alpha.
void add_alpha_switch_option(CLI::App& cmd, std::string& text);
/// A schedule file, text or JSON ("-": standard input); a regular file only (a FIFO is
/// refused, never waited on), at most max_schedule_file_bytes. Errors name the file.
result<schedule::schedule> read_schedule_file(const std::string& path);
/// A comma list of names (commas and spaces separate).
std::vector<std::string> split_list(std::string_view text);

/// "1K", "64M", "1G" for binary multiples, "1MB" for decimal ones, else "1000B".
std::string format_size(int64_t bytes);
/// Microseconds for tables, precision chosen by magnitude ("0.982", "68.9", "85899").
std::string format_us(double seconds);
/// A double as JSON/text would print it shortly ("1.5", "6", "1e-06").
std::string format_number(double x);

// ---- the call flags shared by schedule, verify and predict --------------------------------

struct call_flags {
    std::string collective;
    std::string algorithm;
    std::string ranks;
    std::string topology;    // default star:<ranks>
    std::string count;       // elements; default <ranks>
    std::string root;        // default 0
    std::string peer;        // default (root + 1) mod ranks
    std::string segments;    // default 1; predict and explain also take "auto"
    std::string channels;    // default 1
    std::string ties;        // default toward-plus
    std::string dtype_size;  // default 4
};

/// The largest payload M (--count × --dtype-size, × N for alltoall) a call may have: 2^50
/// bytes (1 PiB), far beyond any buffer, while M in bytes stays exact in the int64 and
/// double figures the verbs print.
constexpr int64_t max_payload_bytes = int64_t{1} << 50;

/// Which of the call flags a verb takes: full (schedule, verify, run), predict (the call
/// without its buffers: compare), predict_segments_auto (predict, explain: --segments auto).
enum class call_flag_set { full, predict, predict_segments_auto };
void add_call_flags(CLI::App& cmd, call_flags& f, call_flag_set set);
/// True when any call flag was given (verify --schedule excludes them).
bool any_call_flag(const call_flags& f);
/// --segments auto: the verb picks each algorithm's least-time P (segments_auto.cc);
/// make_call refuses it, so a verb that takes it clears it first.
bool segments_auto(const call_flags& f);

/// The call the flags describe (names, numbers, topology and its size checked); not the
/// algorithm's own constraints, which algorithms::check_call states.
result<algorithms::call> make_call(const call_flags& f);
/// The algorithm named `name` for `coll`; the error lists the allowed names.
result<const algorithms::algorithm*> find_algorithm(schedule::collective coll,
                                                    std::string_view name);
/// --collective: a collective's name, '-' or '_' between words; required.
result<schedule::collective> parse_collective_flag(std::string_view text);
/// --ties toward-plus|source-parity (empty: toward-plus).
result<algorithms::tie_rule> parse_ties(std::string_view text);
/// --port-model per-edge|single-port.
result<algorithms::port_model> parse_ports(std::string_view text);

/// "broadcast, reduce, …": every collective's name, for messages and help.
std::string collective_names();
/// `text` is "all" (every algorithm of `coll`, catalogue order) or a comma list of names;
/// not_supported when no algorithm implements `coll`.
result<std::vector<const algorithms::algorithm*>> algorithms_named(schedule::collective coll,
                                                                   const std::string& text);

// ---- --segments auto (segments_auto.cc) ----------------------------------------------------

/// The most segments --segments auto considers: the most a call takes
/// (loom_coll_attr_t.segments ≤ LOOM_MAX_SEGMENTS), so the P printed is one the runtime runs.
constexpr int max_auto_segments = LOOM_MAX_SEGMENTS;
/// The P a call may be cut into: its count (one element per segment at least), at most
/// max_auto_segments.
int auto_segments_cap(const algorithms::call& c);
/// The chosen P and its time; segments 0 when no P in 1..cap applies.
struct segment_choice {
    int segments  = 0;
    double time_s = 0;
};
/// The P in 1..cap of least time_at(P) (nullopt: P does not apply): the optimum of the
/// A + B·P + C/P form fitted at P = 1, 2, 4, checked at its integer neighbours.
segment_choice best_segments(int cap, const std::function<std::optional<double>(int)>& time_at);

// ---- --topology FILE.json (fabric_flag.cc) --------------------------------------------------

/// A fabric file given as --topology: its path and the simulator fabric on it (shape,
/// per-link α/BW; alpha_s and bw_bytes_per_s the slowest link's).
struct fabric_file {
    std::string path;
    sim::fabric fabric;
};
/// When flags.topology names a fabric file (topology::names_fabric_file): loads it, builds
/// the simulator fabric on it from `base` (sim::on_fabric), puts its shape in
/// flags.topology and, when --ranks was not given, its rank count in flags.ranks. nullopt
/// for a shape. An error when --alpha/--bw were given too (`alpha_or_bw_given`).
result<std::optional<fabric_file>> take_fabric_file(call_flags& flags, const sim::fabric& base,
                                                    bool alpha_or_bw_given);
/// "fabric file F: torus:4x4, per-link α and BW; the slowest link: α = …, BW = …".
std::string fabric_file_note(const fabric_file& f);

// ---- --calibration FILE (calibration_flag.cc) ---------------------------------------------

struct calibration_flags {
    std::string file;
    std::string host;       // default: this host
    std::string transport;  // default shm
};
void add_calibration_options(CLI::App& cmd, calibration_flags& f);
/// The line for (host, transport) of the file; nullopt without --calibration; an error when
/// the file has no such line, is malformed, or --alpha/--bw were given too.
/// `ranks_text` is the verb's --ranks: the line for that many ranks, else one for any.
result<std::optional<tuner::machine_params>> load_calibration(const calibration_flags& f,
                                                              bool alpha_or_bw_given,
                                                              const std::string& ranks_text);

// ---- verify's output (verify_output.cc) ---------------------------------------------------

/// "ok: allreduce ring on star:4 (4 ranks, count 4): 6 rounds, …": the one-line summary.
std::string verify_summary(const schedule::schedule& s, const schedule::schedule_stats& st);
/// The --stats block: totals, observed against predicted, one row per rank, pairs.
void print_verify_stats(std::ostream& out, const schedule::schedule& s,
                        const schedule::schedule_stats& st, bool pairs);
nlohmann::json verify_json(const schedule::schedule& s, const schedule::schedule_stats& st,
                           bool pairs);

// ---- predictions over algorithms x sizes (predict_table.cc) -------------------------------

/// The α-β model a prediction uses.
struct cost_model {
    double alpha_s               = 1e-6;  // overview's documented default: 1 µs per message
    double bw_bytes_per_s        = 25e9;  // and 25 GB/s per link
    algorithms::port_model ports = algorithms::port_model::per_edge;
    double alpha_switch_s        = -1;  // rank ↔ aggregation node; negative: alpha_s
};

/// --alpha, --bw, --alpha-switch and --port-model as given (each verb words their help).
struct link_flags {
    std::string alpha;         // default 1us; empty tells a fabric file that it was not given
    std::string bw;            // default 25GB/s
    std::string alpha_switch;  // default: α
    // The default comes from LOOM_PORT_MODEL (the parameter registry), per-edge unless set.
    std::string ports = tuner::params::port_model.get();
    bool alpha_or_bw_given() const { return !alpha.empty() || !bw.empty(); }
};
/// The model the link flags give (1 µs and 25 GB/s where not given); the first bad flag's
/// message otherwise.
result<cost_model> parse_link_flags(const link_flags& f);

/// One algorithm at one size: the library's cost, or why it does not apply.
struct prediction {
    const algorithms::algorithm* algo = nullptr;
    int64_t bytes                     = 0;
    status applicable;  // ok, or the reason from algorithms::check_call
    algorithms::cost cost;
    double time_s = 0;
    bool fastest  = false;  // the least time at this size among the applicable
    int segments  = 1;      // the P costed: the call's, or the one --segments auto chose
};

/// Every algorithm at every size, algorithm-major; `base` gives the collective, N, topology
/// and segments (its count is set from each size); `auto_segments`: each cell at its own
/// least-time P (best_segments) instead.
std::vector<prediction> predict_grid(const algorithms::call& base,
                                     std::span<const algorithms::algorithm* const> algos,
                                     std::span<const int64_t> sizes, const cost_model& model,
                                     bool auto_segments = false);
/// At each size, marks the rows of least time among those that apply; ties (equal closed
/// forms) all get the mark, 1e-12 absorbs rounding only. `rows` is algorithm-major over
/// `nsizes` sizes, as predict_grid returns them.
template <class Row, class Applies, class Time, class Mark>
void mark_least_time(std::vector<Row>& rows, size_t nsizes, Applies applies, Time time, Mark mark) {
    for (size_t s = 0; s < nsizes; ++s) {
        double best = -1;
        for (size_t i = s; i < rows.size(); i += nsizes) {
            if (applies(rows[i]) && (best < 0 || time(rows[i]) < best)) {
                best = time(rows[i]);
            }
        }
        for (size_t i = s; i < rows.size(); i += nsizes) {
            mark(rows[i], applies(rows[i]) && time(rows[i]) <= best * (1 + 1e-12));
        }
    }
}
/// One line naming the call and the model ("allreduce on star:64 (64 ranks), per-edge, …").
std::string grid_title(const algorithms::call& base, const cost_model& model,
                       bool auto_segments = false);
/// The table: one row per algorithm, one column per size (µs), * on the fastest, then the
/// algorithms that apply at no size with their reason.
void print_grid(std::ostream& out, std::span<const int64_t> sizes,
                const std::vector<prediction>& grid);
/// Under --segments auto: the same rows with the P each cell was costed at.
void print_grid_segments(std::ostream& out, std::span<const int64_t> sizes,
                         const std::vector<prediction>& grid);
/// "  not applicable: <name>: <reason>" and a newline, for an algorithm that applies at no
/// size.
std::string not_applicable_line(const prediction& p);
/// Payload bytes (schedule::payload_bytes) per element of the call: its dtype_size, times N
/// for all-to-all (M is the whole send buffer).
int64_t payload_per_element(const algorithms::call& c);
/// The count whose payload is exactly `bytes`; invalid_argument naming the element size,
/// collective and N when `bytes` is not a whole number of elements.
result<int64_t> count_for_bytes(const algorithms::call& c, int64_t bytes);
/// One prediction as the JSON object predict --json prints.
nlohmann::json prediction_json(const algorithms::call& base, const cost_model& model,
                               const prediction& p);

}  // namespace loom::sim_tool
