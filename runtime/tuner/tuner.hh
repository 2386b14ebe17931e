// SPDX-License-Identifier: Apache-2.0
// The tuner: for one call, every algorithm of its primitive ranked by predicted time
// (closed-form cost × calibrated α, BW × topology × port model × in-network availability,
// plus the local reduction at the calibrated throughput),
// the excluded ones with the reason, and the choice. A pure function of its inputs, so
// every rank that holds the same parameters (the communicator agrees on rank 0's) chooses
// the same algorithm: a choice that differs across ranks would be a mismatch, not a tuning.
//
// Choices are cached per (primitive, element size, in-network usable, size bucket): bucket
// b ≥ 1 holds payloads in [2^(b-1), 2^b) bytes and is decided at its geometric middle,
// whatever call came first, so a local loom_comm_explain never changes a later choice.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "algorithms/algorithm.hh"
#include "tuner/calibration.hh"

namespace loom::tuner {

/// Whether the in-network algorithms (algorithm::in_network) can run this call, and why not.
/// The same for the node-local algorithms (algorithm::node_local, the flat segment).
struct in_network_state {
    bool usable              = false;  // admitted by the aggregation node and a dtype/op it reduces
    std::string why_not      = "no aggregation node (LOOM_SWITCH unset)";
    bool flat_usable         = false;  // every rank on one node over shm, segment up, call fits
    std::string flat_why_not = "no flat segment (the communicator is not on one node over shm)";
};

/// Whether `a` can run `c` here: its own constraints (algorithms::check_call) and, for an
/// algorithm that runs in the network, an aggregation node that carries the call (else
/// LOOM_ERR_NOT_APPLICABLE with inc.why_not). The one test behind both the ranking and an
/// explicitly named algorithm.
status admits(const algorithms::algorithm& a, const algorithms::call& c,
              const in_network_state& inc);

struct candidate {
    const algorithms::algorithm* algo = nullptr;
    bool applicable                   = false;
    double time_s                     = -1;  // predicted; < 0 when excluded
    std::string reason;                      // excluded: why; else the cost formula (and its note)
};

struct ranking {
    std::vector<candidate> candidates;  // applicable, fastest first; then the excluded
    const algorithms::algorithm* best = nullptr;
    double bytes                      = 0;  // the payload M ranked at
};

/// The local work of one rank (rank 0; a rooted call's root), from its schedule: bytes it
/// combines with the op and bytes it copies within its memory. The α-β forms leave both
/// out, yet they decide between algorithms that move the same bytes: recursive doubling
/// reduces M where the reduce-scatter based ones reduce (N-1)/N·M; Bruck's all-to-all
/// rotates the whole buffer twice where pairwise copies one block.
struct local_work {
    double reduced = 0;
    double copied  = 0;
};
local_work local_bytes(const algorithms::algorithm& a, const algorithms::call& c);

/// Predicted time of `a` running `c` with payload `bytes` on these parameters: the
/// closed form at α, BW (α_switch), plus the local work at reduce_bytes_per_s (a
/// memory-bound rate; copies are charged at it too) when that is known (> 0).
double predict_s(const algorithms::algorithm& a, const algorithms::call& c, double bytes,
                 const machine_params& p, algorithms::port_model ports);

/// The call's payload M (schedule::payload_bytes of its primitive, N, count, element size).
double payload_bytes(const algorithms::call& c);

/// Every algorithm of c.coll, ranked. Ties keep catalogue order.
ranking rank_algorithms(const algorithms::call& c, const machine_params& p,
                        algorithms::port_model ports, const in_network_state& inc);

/// The payload bucket of `bytes` (0 for an empty call) and the bytes it is decided at.
int size_bucket(double bytes);
double bucket_middle(int bucket);
constexpr int size_buckets = 66;

/// The call scaled to the middle of its bucket (payload is linear in the count).
algorithms::call representative(const algorithms::call& c, double bytes);

/// Cached choices; see the file comment. The flat segment's availability is keyed too: it
/// depends on the call's size (LOOM_FLAT_MAX_BYTES), decided on the call itself. Not thread-safe (a
/// communicator's calls are made by one thread at a time).
class decision_cache {
  public:
    const algorithms::algorithm* find(const algorithms::call& c, bool inc_usable, double bytes,
                                      bool flat_usable = false) const {
        return table_[index(c, inc_usable, bytes, flat_usable)];
    }
    void put(const algorithms::call& c, bool inc_usable, double bytes,
             const algorithms::algorithm* a, bool flat_usable = false) {
        table_[index(c, inc_usable, bytes, flat_usable)] = a;
    }
    void clear() { table_.fill(nullptr); }

  private:
    static size_t index(const algorithms::call& c, bool inc_usable, double bytes, bool flat_usable);
    // element sizes 1, 2, 4, 8 (others share the last row) × inc usable × flat usable
    std::array<const algorithms::algorithm*, schedule::collective_count * 4 * 2 * 2 * size_buckets>
        table_{};
};

/// The ranking as a table, with the choice (and, when it came from the bucket, where the
/// bucket was decided) and the parameters: the text of LOOM_EXPLAIN, loom_comm_explain
/// and loom-sim explain.
std::string explain_text(const algorithms::call& c, const ranking& r,
                         const algorithms::algorithm* chosen, std::string_view origin,
                         const machine_params& p, algorithms::port_model ports);

}  // namespace loom::tuner
