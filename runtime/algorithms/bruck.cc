// SPDX-License-Identifier: Apache-2.0
// Bruck family: alltoall (Bruck, Ho, Kipnis, Upfal, Weathersby 1997; Lu-CA App. B.5).
//
// How it works
//   Rank i keeps a "work" vector of N slots (scratch), slot = `count` elements.
//   1. Pre-rotation (local): work[j] = in[(i + j) mod N], so slot j holds the data for rank
//      i + j: its remaining distance is j.
//   2. Rounds k = 0..K-1 (K = ⌈log2 N⌉): rank i sends to i + 2^k and receives from i - 2^k
//      the slots j < N whose bit k is set; received slots overwrite the sent ones. A datum
//      for distance j moves by exactly the set bits of j, so after K rounds the datum that
//      rank s meant for rank i sits in rank i's slot (i - s) mod N.
//   3. Post-rotation (local), docs/references.md#bruck-rotation: out[j] = work[(i - j) mod N].
//   Lu-CA says "rotate
//      right by i and optionally reverse"; a right rotation alone is wrong for every N ≥ 3
//      (it would give out[j] = work[(j - i) mod N]); the exact rule is the index reversal
//      above, which follows from step 2.
//   The slots of one round are runs of 2^k consecutive slots (all of them at k = K-1 when
//   they are one run); they are packed into a "send staging" area and go as ONE message per
//   round, and the message lands in a "receive staging" area before it is unpacked into the
//   work vector (the unpack overwrites slots the same round's send reads).
//   Nothing here needs N = 2^K: the bit test runs over j < N, so the last round just moves
//   fewer slots (no padding, no extra round).
//
// Cost (per-edge and single-port alike: one partner out and one in per round)
//   t = ⌈log2N⌉α + (Σ_k c_k)/N · M/BW,   c_k = |{ j < N : bit k of j set }|
//                                           = ⌊N/2^(k+1)⌋·2^k + max(0, N mod 2^(k+1) - 2^k)
//   M = the whole send buffer, N·count·dtype; round k carries c_k·count elements per link.
//   For N = 2^K every c_k = N/2 and t = log2N·α + log2N/2 · M/BW (Lu-CA App. B.5; N = 4:
//   2α + M/BW). docs/references.md#bruck-crossover: Lu-CA's ⌈log2N⌉·M/(2BW) assumes N = 2^K; for
//   other N loom counts the slots really moved (N = 5: c = 2, 2, 1 → 1·M/BW, not 1.5; N = 6: 3, 2,
//   2 → 7/6). Crossover against pairwise ((N-1)α + (N-1)/N·M/BW), from the closed forms
//   (docs/references.md#bruck-crossover; Lu-CA §7.3 computes none): Bruck is faster below
//     M* = (N - 1 - ⌈log2N⌉)·N / (Σc_k - (N - 1)) · α·BW      (N = 4: 4αBW; N = 8: 6.4αBW)
//   and the two coincide at N ≤ 3 (Σc_k = N - 1 and ⌈log2N⌉ = N - 1).
//
// Constraints
//   Any N ≥ 1, any count (including 0). No root. Needs scratch of (N + 2·max c_k)·count
//   elements. Logical partners i ± 2^k: on a torus the simulator charges the physical hops.
#include <algorithm>
#include <cstdio>

#include "families.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

// Slots moved in round k: |{ j < n : bit k of j set }|.
int64_t slots_in_round(int64_t n, int k) {
    int64_t period = int64_t{2} << k, half = int64_t{1} << k;
    return n / period * half + std::max<int64_t>(0, n % period - half);
}

// The runs of round k, as [first slot, end slot).
std::vector<std::pair<int, int>> round_runs(int n, int k) {
    std::vector<std::pair<int, int>> runs;
    int half = 1 << k;
    for (int a = half; a < n; a += 2 * half) {
        runs.push_back({a, std::min(a + half, n)});
    }
    return runs;
}

// Steps that overwrite the work slots of round k with what arrived; returns the last one.
struct round_steps {
    step_id send;
    step_id last_local;
};

round_steps bruck_round(const call& c, int rank, int k, int64_t send_stage, int64_t recv_stage,
                        schedule::builder& b, step_id last_local, step_id prev_send) {
    int n        = c.nranks;
    int64_t cnt  = c.count;
    auto runs    = round_runs(n, k);
    int64_t size = slots_in_round(n, k) * cnt;
    region src   = schedule::tmp(runs[0].first * cnt, size);
    if (runs.size() > 1) {
        // Pack the runs so the round is one message; the stage was read by the last send.
        src         = schedule::tmp(send_stage, size);
        int64_t off = send_stage;
        for (auto [a, e] : runs) {
            int64_t len = (e - a) * cnt;
            last_local  = b.local_copy(schedule::tmp(off, len), schedule::tmp(a * cnt, len),
                                       {last_local, prev_send});
            off += len;
        }
    }
    step_id sent = b.send(mod(rank + (1 << k), n), src, {last_local, prev_send});
    // The receive stage was read by the previous round's unpack (in last_local's chain).
    step_id got = b.recv(mod(rank - (1 << k), n), schedule::tmp(recv_stage, size), {last_local});
    int64_t off = recv_stage;
    for (auto [a, e] : runs) {
        int64_t len = (e - a) * cnt;
        // After the send: it (or the pack) reads the slots this overwrites.
        last_local = b.local_copy(schedule::tmp(a * cnt, len), schedule::tmp(off, len),
                                  {last_local, got, sent});
        off += len;
    }
    return {sent, last_local};
}

status build_alltoall(const call& c, int rank, schedule::builder& b) {
    int n       = c.nranks;
    int64_t cnt = c.count;
    if (n == 1) {
        b.local_copy(schedule::out(0, cnt), schedule::in(0, cnt));
        return status::ok();
    }
    int rounds        = ceil_log2(n);
    int64_t max_slots = 0;
    for (int k = 0; k < rounds; ++k) {
        max_slots = std::max(max_slots, slots_in_round(n, k));
    }
    int64_t send_stage = n * cnt, recv_stage = send_stage + max_slots * cnt;
    b.need_scratch(recv_stage + max_slots * cnt);
    // Pre-rotation: work[j] = in[(rank + j) mod N], two contiguous pieces.
    step_id last_local = b.local_copy(schedule::tmp(0, (n - rank) * cnt),
                                      schedule::in(rank * cnt, (n - rank) * cnt));
    if (rank > 0) {
        last_local = b.local_copy(schedule::tmp((n - rank) * cnt, rank * cnt),
                                  schedule::in(0, rank * cnt), {last_local});
    }
    step_id prev_send = no_step;
    for (int k = 0; k < rounds; ++k) {
        auto r     = bruck_round(c, rank, k, send_stage, recv_stage, b, last_local, prev_send);
        prev_send  = r.send;
        last_local = r.last_local;
    }
    // Post-rotation, docs/references.md#bruck-rotation: out[j] = work[(rank - j) mod N].
    for (int j = 0; j < n; ++j) {
        b.local_copy(schedule::out(j * cnt, cnt), schedule::tmp(mod(rank - j, n) * cnt, cnt),
                     {last_local});
    }
    return status::ok();
}

cost cost_bruck(const cost_query& q) {
    int n = q.nranks;
    if (n == 1) {
        return {0, 0, true, "one rank: a local copy"};
    }
    int rounds    = ceil_log2(n);
    int64_t moved = 0;
    for (int k = 0; k < rounds; ++k) {
        moved += slots_in_round(n, k);
    }
    std::string note =
        "Lu-CA App. B.5; non-power-of-two N counts the slots moved "
        "(docs/references.md#bruck-crossover); single-port = "
        "per-edge (one partner in, one out per round)";
    if (moved > n - 1) {
        char buf[96];
        std::snprintf(
            buf, sizeof buf, "; faster than pairwise below M* = %.6g·α·BW",
            static_cast<double>(n - 1 - rounds) * n / static_cast<double>(moved - (n - 1)));
        note += buf;
    } else {
        note += "; same cost as pairwise at this N";
    }
    return {static_cast<double>(rounds), static_cast<double>(moved) / n, true, note};
}

const algorithm alltoall_bruck{
    "bruck",
    collective::alltoall,
    "rotate, ⌈log2N⌉ rounds sending the slots with bit k set to rank+2^k, rotate back",
    "⌈log2N⌉α + Σ_k|{j<N: bit k of j}|/N·M/BW (N=2^k: log2N/2·M/BW)",
    "any N, any count; scratch (N + 2·max_k c_k)·count",
    any_call,
    build_alltoall,
    cost_bruck};

}  // namespace

std::vector<const algorithm*> family_bruck() {
    return {&alltoall_bruck};
}

}  // namespace loom::algorithms
