// SPDX-License-Identifier: Apache-2.0
// The verifier: a symbolic run of all ranks of a schedule together (docs/architecture.md#executors,
// executor 1).
//
// It proves, or names the rank, step and element where it fails:
//  1. structure: peers, dependencies and regions in range; the input buffer is never written;
//  2. matching: every send meets exactly one receive of the same length (step.hh's rule);
//  3. progress: no deadlock when "a step starts once its dependencies are done and its
//     peer's matching step is posted" (rendezvous, the strictest transport); a wait cycle is
//     printed rank by rank;
//  4. races: two steps of one rank that touch overlapping elements, one of them writing,
//     are ordered by dependencies;
//  5. values: every output element holds exactly what the primitive requires; for
//     reductions every rank's contribution exactly once (collective.hh conventions).
// Along the way it counts what the cost model predicts (schedule_stats).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "schedule.hh"

namespace loom::schedule {

struct rank_stats {
    int64_t steps            = 0;
    int64_t sends            = 0;
    int64_t receives         = 0;
    int64_t bytes_sent       = 0;
    int64_t bytes_received   = 0;
    int max_concurrent_peers = 0;  // distinct peers in one round
};

/// Counts of a schedule, under lockstep rounds: a transfer happens in round
/// 1 + max(round in which its send became ready, round in which its receive became ready).
struct schedule_stats {
    int rounds        = 0;  // transfer rounds on the critical path: the observed n_alpha
    double edge_bytes = 0;  // sum over rounds of the largest transfer: n_beta * M, per-edge
    double port_bytes = 0;  // sum over rounds of the busiest rank port (max of in, out):
                            // n_beta * M under the single-port model
    int64_t total_steps = 0;
    int64_t total_bytes = 0;  // all bytes sent by all ranks
    std::vector<rank_stats> per_rank;
    /// Bytes per directed pair (src << 32 | dst); filled when verify_options::pair_bytes.
    std::unordered_map<uint64_t, int64_t> pair_bytes;
    bool races_checked  = false;
    bool values_checked = false;
    // With verify_options::route_links (a lattice): each transfer crosses the physical links
    // of its route, cut-through. A round then costs its longest route in hops (α each) and
    // its busiest physical link in bytes.
    double hop_rounds = 0;  // Σ over rounds of the most hops any transfer of the round takes
    double link_bytes = 0;  // Σ over rounds of the bytes on the busiest physical link
};

struct verify_options {
    bool check_values = true;  // symbolic data (off: structure, matching, deadlock, stats)
    bool check_races  = true;
    bool pair_bytes   = false;
    /// The directed physical links (ids chosen by the caller) a transfer src → dst crosses;
    /// when set, the statistics count physical hops and link sharing (schedule_stats).
    std::function<void(int src, int dst, std::vector<uint64_t>& links)> route_links;
};

struct verify_report {
    status result;         // ok, or LOOM_ERR_VERIFY with the first problem found
    schedule_stats stats;  // complete when the run completed (no deadlock)
};

verify_report verify(const schedule& s, const verify_options& options = {});

}  // namespace loom::schedule
