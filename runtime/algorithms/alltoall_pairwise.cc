// SPDX-License-Identifier: Apache-2.0
// Pairwise direct-send all-to-all (Lu-CA §7.2; NCCL's staggered P2P schedule).
//
// How it works
//   Rank r holds N blocks of `count` elements in its input, block j destined for rank j
//   (collective.hh). It copies its own block r into output block r, then runs N-1 steps:
//   in step k = 1..N-1 it sends input block (r+k) mod N to rank (r+k) mod N and receives
//   output block (r-k) mod N from rank (r-k) mod N. The offsets are staggered by rank, so
//   in every step each rank has exactly one destination and one source and the N
//   concurrent sends form a permutation (no two share a receiver).
//   Step k+1 waits for step k's send and receive (the send also for the previous receive),
//   which keeps the steps in lockstep and at most one transfer per direction in flight.
// Nomenclature: a "block" is the `count` elements for one destination (M/N bytes).
//
// Cost (M = the whole send buffer, N·count·dtype bytes; schedule::payload_bytes)
//   per-edge      (N-1)α + (N-1)/N · M/BW      Lu-CA §7.2, exact (N = 4: 3α + 3/4·M/BW)
//   single-port   the same: each step a rank sends one block and receives one, so its one
//                 full-duplex port carries M/N each way per step.
//   The local copy of the own block is not a transfer and costs nothing here.
//
// Constraints
//   Any N ≥ 1, any count (including 0), any topology. The form assumes every pair has a
//   direct path (star, full mesh: full bisection). On a torus or mesh the fabric forwards a
//   non-neighbour send hop by hop, which this closed form does not model; there the relay
//   schedules (alltoall_relay.cc) say what each link carries.
#include "families.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

status build_pairwise(const call& c, int rank, schedule::builder& b) {
    const int n       = c.nranks;
    const int64_t blk = c.count;
    auto block_in     = [&](int j) { return schedule::in(j * blk, blk); };
    auto block_out    = [&](int j) { return schedule::out(j * blk, blk); };
    b.local_copy(block_out(rank), block_in(rank));
    step_id prev_send = no_step, prev_recv = no_step;
    for (int k = 1; k < n; ++k) {
        int to = mod(rank + k, n), from = mod(rank - k, n);
        step_id s = b.send(to, block_in(to), {prev_send, prev_recv});
        prev_recv = b.recv(from, block_out(from), {prev_recv});
        prev_send = s;
    }
    return status::ok();
}

cost cost_pairwise(const cost_query& q) {
    double n = q.nranks;
    return {n - 1, (n - 1) / n, true,
            "Lu-CA §7.2, exact; same under single-port (one block in, one out per step); "
            "assumes a direct path per pair"};
}

const algorithm alltoall_pairwise{
    "pairwise",
    collective::alltoall,
    "N-1 steps; step k sends to rank r+k and receives from r-k (staggered offsets)",
    "(N-1)α + (N-1)/N·M/BW",
    "any N, any count, any topology (direct paths assumed)",
    any_call,
    build_pairwise,
    cost_pairwise};

}  // namespace

std::vector<const algorithm*> family_alltoall_pairwise() {
    return {&alltoall_pairwise};
}

}  // namespace loom::algorithms
