// SPDX-License-Identifier: Apache-2.0
// The machine parameters the tuner and loom-sim predict with: per host and transport, α
// (per-message latency), BW (streaming bandwidth between two ranks), the local reduction
// throughput and α to the aggregation node.
//
// They live in one text file the user can read, edit and delete (LOOM_CALIBRATION_FILE,
// else $XDG_CACHE_HOME/loom/calibration.txt, else ~/.cache/loom/calibration.txt), one line
// per host, transport and rank count (α and BW are fitted to collectives of that many
// ranks: 8 ranks on 2 cores cost more per round than 2):
//   host=node7 transport=shm ranks=4 alpha_us=2.1 bw_GBps=5.3 reduce_GBps=9.8 …
// A line without ranks= (written by hand) serves any rank count.
// A missing file or line means "not calibrated": the communicator measures (LOOM_CALIBRATE=
// auto) or uses the built-in defaults of the transport below. A measured line also records
// when and how it was measured (date, load1, cpus, repeats, spread, version, method), so
// calibration_checks.hh can tell figures that are stale or were measured under load.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.hh"

namespace loom::tuner {

/// The largest ranks= a calibration line may give (a communicator of more ranks is served
/// by a line without ranks=).
constexpr int max_calibration_ranks = 1 << 24;

struct machine_params {
    std::string host;
    std::string transport;          // the cost class: "shm", "tcp" or "self" (below)
    int ranks                 = 0;  // the communicator size measured; 0: any
    double alpha_s            = 2e-6;
    double bw_bytes_per_s     = 4e9;
    double reduce_bytes_per_s = 8e9;         // <= 0: reductions not counted
    double alpha_switch_s     = -1;          // < 0: alpha_s
    double alpha_flat_s       = -1;          // < 0: flat_alpha_share · alpha_s
    std::string source        = "defaults";  // "defaults", "file", "measured"
    std::string file;                        // where they came from or went to
    // How a measurement went (calibration_checks.hh judges it; the file records it):
    bool measured = false;  // the file's line says source=measured (load() reports "file")
    std::string date;       // when, UTC "YYYY-MM-DDTHH:MM:SSZ"; empty: a line written by hand
    std::string method;     // "auto" (at creation), "calibrate", "thorough"
    std::string version;    // the loom that measured
    double load1  = -1;     // the host's 1-minute load average just before; < 0: unknown
    int cpus      = 0;      // the CPUs online then
    int repeats   = 0;      // α was estimated this many times over successive samples
    double spread = -1;     // (largest − smallest) / median of those estimates; < 0: unknown

    double switch_alpha() const { return alpha_switch_s < 0 ? alpha_s : alpha_switch_s; }
    double flat_alpha() const {
        return alpha_flat_s < 0 ? flat_alpha_share * alpha_s : alpha_flat_s;
    }

    /// α of a hand-off through the node's flat segment (algorithms/flat.cc) as a share of
    /// the message α, until a calibration line gives alpha_flat_us: one cache line moving
    /// between cores against a message's header, matching, copy and completion. Measured
    /// on the 2-core VM over shm (docs/performance.md#flat): 8 B flat all-reduce at N = 2
    /// against the calibrated α.
    static constexpr double flat_alpha_share = 0.25;
};

/// Built-in figures of a cost class (a 2-core VM's order of magnitude), used until a
/// calibration exists. The classes are what carries the messages, as an endpoint's caps
/// say (drivers::medium): "shm" (shared memory, and anything unknown), "tcp" (a network),
/// "self" (the own rank); a wrapper such as fwd:shm or fault:tcp is its inner driver's.
machine_params defaults_for(std::string_view cost_class);

/// This host's name (gethostname), "localhost" when unknown.
std::string host_name();

/// The calibration file to use: `configured` (LOOM_CALIBRATION_FILE) when set, else
/// XDG_CACHE_HOME/loom/calibration.txt, else HOME/.cache/loom/calibration.txt, else under
/// /tmp. The caller passes the variables (the parameter registry reads the environment).
std::string calibration_path(std::string_view configured, std::string_view xdg_cache_home,
                             std::string_view home);

/// Reads the line for (host, cost class, ranks) from `path` — one with exactly
/// `ranks`, else one without ranks= — nullopt when the file or the line is absent. A
/// malformed line is LOOM_ERR_PARSE naming the file and line.
result<std::optional<machine_params>> load(const std::string& path, std::string_view host,
                                           std::string_view cost_class, int ranks = 0);

/// Writes `p` as the line for its (host, cost class, ranks), keeping the others; the
/// file is replaced atomically (write aside, rename), directories created as needed.
status save(const std::string& path, const machine_params& p);

/// One line of the file, and its inverse (used for the file and for agreeing across ranks).
std::string to_line(const machine_params& p);
result<machine_params> from_line(std::string_view line);

}  // namespace loom::tuner
