// SPDX-License-Identifier: Apache-2.0
// PAT family (Parallel Aggregated Trees, NCCL 2.23+, Lu-CA App. A): allgather, reduce_scatter.
//
// How it works
//   N broadcast trees, one per block, all of the same shape and translated by their root,
//   advance one level per round. Round k = 1..K (K = ⌈log2 N⌉) uses the distance
//     d_k = ⌈N / 2^k⌉            (farthest first: N/2, N/4, …, 1 when N = 2^K)
//   and every rank r sends to r + d_k and receives from r - d_k (mod N).
//   Offsets: rank r "holds offset o" when it holds block (r - o) mod N. S_0 = {0}; the
//   sender r - d_k holds S_{k-1}, which is S_{k-1} + d_k in r's frame, so round k brings
//     new_k  = (S_{k-1} + d_k) \ S_{k-1}          (offsets r lacks; S_k = S_{k-1} ∪ new_k)
//   and the sender ships exactly the offsets o ∈ S_{k-1} with o + d_k ∉ S_{k-1} (sent_k).
//   Every block reaches every rank exactly once (a spanning tree per block, depth K), and
//   S_K = Z_N because the subset sums of {⌈N/2⌉, ⌈N/4⌉, …, 1} cover 0..N-1 (d_k = ⌈d_{k-1}/2⌉,
//   so each d_k ≤ 1 + the sum of the later ones: the sums are contiguous from 0 to
//   Σd_k ≥ 2⌈N/2⌉ - 1 ≥ N - 1), and no round is empty (|S_k| ≤ 2|S_{k-1}|). For N = 2^K the
//   sets are the multiples of d_k, sent_k = S_{k-1} ("send all you hold"), and the tree of
//   block 0 is exactly Lu-CA's N = 8 trace: R0→R4; R0→R2, R4→R6; R0→R1, R2→R3, R4→R5, R6→R7.
//   (Lu-CA pairs ranks by XOR; XOR and +d_k give the same sets and counts at N = 2^K, and +d_k
//   also works for every other N.)
//   Nomenclature: a "block" is rank b's 1/N share (collective.hh partition, uneven allowed);
//   the "work" vector (scratch) holds blocks in arrival order (offset 0, then new_1, new_2 …),
//   so what a round receives is one contiguous range. What a round sends may be several
//   runs of the work vector; they are packed into a "staging" area and go as ONE message,
//   so every link carries one message per round (one α).
//   allgather: the work vector fills round by round; at the end it is unpacked into the
//     output (local copies).
//   reduce_scatter: the mirror (Lu-CA: "reverse the schedule and replace forward-concat with
//     sum-in"): rounds K..1, rank r sends its new_k range of partial sums to r - d_k and adds
//     what r + d_k sends into its sent_k offsets; it ends with the sum of block r.
//
// Cost (per-edge and single-port alike: one partner out and one in per round)
//   allgather, reduce_scatter   ⌈log2N⌉α + (N-1)/N · M/BW        (Lu-CA App. A, any N)
//   M = the full vector. Round k carries |new_k| = |S_k| - |S_{k-1}| blocks per link; these
//   sum to N-1, so the BW term is exact for every N when N divides the count.
//   docs/references.md#pat-payload: Lu-CA says every link carries a constant M/N per round. That
//   cannot be: K rounds of M/N would ship only ⌈log2N⌉·M/N, not the (N-1)·M/N each rank must
//   receive. The per-round payload GROWS: for N = 2^K round k carries 2^(k-1) blocks (1, 2, 4, …),
//   which sums to N-1 and gives the closed form above. For other N the counts are |new_k|
//   (N = 5: 1, 1, 2; N = 6: 1, 2, 2; N = 12: 1, 2, 4, 4); the staging area is bounded by the
//   largest round, not by M/N.
//
// Constraints
//   Any N ≥ 1, any count (including 0 and count < N). No root. Star or any topology (the
//   distances are logical; on a torus the simulator charges the physical hops).
#include <functional>
#include <numeric>

#include "families.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

// The shape shared by all ranks: distances, arrival order, per-round sets (as work indices).
struct pat_plan {
    int n = 1;
    std::vector<int> dist;               // d_k, k = 0..K-1 (round k+1)
    std::vector<int> order;              // work index -> offset
    std::vector<int> round_begin;        // work indices of round k's arrivals: [rb[k], rb[k+1])
    std::vector<std::vector<int>> sent;  // work indices the sender ships in round k (ascending)
};

pat_plan make_plan(int n) {
    pat_plan p;
    p.n = n;
    std::vector<int> pos(n, -1);
    p.order = {0};
    pos[0]  = 0;
    p.round_begin.push_back(1);
    for (int k = 1; k <= ceil_log2(n); ++k) {
        int d = static_cast<int>((n + (int64_t{1} << k) - 1) >> k);
        p.dist.push_back(d);
        std::vector<int> ship;
        int held = static_cast<int>(p.order.size());
        for (int i = 0; i < held; ++i) {
            if (pos[(p.order[i] + d) % n] < 0) {
                ship.push_back(i);
            }
        }
        for (int i : ship) {
            int o  = (p.order[i] + d) % n;
            pos[o] = static_cast<int>(p.order.size());
            p.order.push_back(o);
        }
        p.sent.push_back(std::move(ship));
        p.round_begin.push_back(static_cast<int>(p.order.size()));
    }
    return p;
}

// Rank r's work vector: element offset of every work index (block (r - offset) mod N).
std::vector<int64_t> work_offsets(const pat_plan& p, int64_t count, int rank) {
    std::vector<int64_t> at(p.n + 1, 0);
    for (int i = 0; i < p.n; ++i) {
        at[i + 1] = at[i] + schedule::block_size(count, p.n, mod(rank - p.order[i], p.n));
    }
    return at;
}

// Maximal runs of consecutive work indices, as element regions of the work vector.
std::vector<region> runs_of(const std::vector<int>& idx, const std::vector<int64_t>& at) {
    std::vector<region> runs;
    for (size_t a = 0; a < idx.size();) {
        size_t b = a + 1;
        while (b < idx.size() && idx[b] == idx[b - 1] + 1) {
            ++b;
        }
        runs.push_back(schedule::tmp(at[idx[a]], at[idx[b - 1] + 1] - at[idx[a]]));
        a = b;
    }
    return runs;
}

int64_t total_of(const std::vector<region>& runs) {
    return std::transform_reduce(runs.begin(), runs.end(), int64_t{0}, std::plus<>(),
                                 [](const region& r) { return r.count; });
}

status build_allgather(const call& c, int rank, schedule::builder& b) {
    int n        = c.nranks;
    int64_t mine = schedule::block_size(c.count, n, rank);
    auto own_out = schedule::out(schedule::block_offset(c.count, n, rank), mine);
    b.local_copy(own_out, schedule::in(0, mine));
    if (n == 1) {
        return status::ok();
    }
    auto plan = make_plan(n);
    auto at   = work_offsets(plan, c.count, rank);
    b.need_scratch(2 * c.count);  // work vector, then the staging area
    step_id prev_recv = b.local_copy(schedule::tmp(0, mine), schedule::in(0, mine));
    step_id prev_send = no_step;
    for (size_t k = 0; k < plan.dist.size(); ++k) {
        int d          = plan.dist[k];
        auto runs      = runs_of(plan.sent[k], at);
        region src     = runs.size() == 1 ? runs[0] : schedule::tmp(c.count, total_of(runs));
        step_id packed = no_step;
        if (runs.size() > 1) {
            // Several runs: pack them so the round is one message on the link.
            int64_t off = c.count;
            for (const auto& r : runs) {
                packed =
                    b.local_copy(schedule::tmp(off, r.count), r, {prev_recv, prev_send, packed});
                off += r.count;
            }
        }
        prev_send = b.send(mod(rank + d, n), src, {prev_recv, prev_send, packed});
        int lo = plan.round_begin[k], hi = plan.round_begin[k + 1];
        prev_recv = b.recv(mod(rank - d, n), schedule::tmp(at[lo], at[hi] - at[lo]), {prev_recv});
    }
    for (int i = 1; i < n; ++i) {
        int blk = mod(rank - plan.order[i], n);
        b.local_copy(schedule::out(schedule::block_offset(c.count, n, blk), at[i + 1] - at[i]),
                     schedule::tmp(at[i], at[i + 1] - at[i]), {prev_recv});
    }
    return status::ok();
}

// Adds what rank + d sends (partial sums of the `sent` offsets) into the work vector.
step_id reduce_round(schedule::builder& b, int peer, const std::vector<region>& runs,
                     int64_t staging, step_id last_local) {
    if (runs.size() == 1) {
        return b.recv_reduce(peer, runs[0], runs[0], {last_local});
    }
    step_id got = b.recv(peer, schedule::tmp(staging, total_of(runs)), {last_local});
    int64_t off = staging;
    for (const auto& r : runs) {
        last_local = b.local_reduce(r, r, schedule::tmp(off, r.count), {last_local, got});
        off += r.count;
    }
    return last_local;
}

status build_reduce_scatter(const call& c, int rank, schedule::builder& b) {
    int n        = c.nranks;
    int64_t mine = schedule::block_size(c.count, n, rank);
    if (n == 1) {
        b.local_copy(schedule::out(0, mine), schedule::in(0, mine));
        return status::ok();
    }
    auto plan = make_plan(n);
    auto at   = work_offsets(plan, c.count, rank);
    b.need_scratch(2 * c.count);
    // The work vector starts as this rank's contribution to every block, in arrival order.
    step_id last_local = no_step;
    for (int i = 0; i < n; ++i) {
        int blk    = mod(rank - plan.order[i], n);
        last_local = b.local_copy(
            schedule::tmp(at[i], at[i + 1] - at[i]),
            schedule::in(schedule::block_offset(c.count, n, blk), at[i + 1] - at[i]), {last_local});
    }
    step_id prev_send = no_step;
    for (int k = static_cast<int>(plan.dist.size()) - 1; k >= 0; --k) {
        int d  = plan.dist[k];
        int lo = plan.round_begin[k], hi = plan.round_begin[k + 1];
        // new_k's partial sums are complete: every later round's additions are in.
        prev_send = b.send(mod(rank - d, n), schedule::tmp(at[lo], at[hi] - at[lo]),
                           {last_local, prev_send});
        last_local =
            reduce_round(b, mod(rank + d, n), runs_of(plan.sent[k], at), c.count, last_local);
    }
    b.local_copy(schedule::out(0, mine), schedule::tmp(0, mine), {last_local});
    return status::ok();
}

cost cost_pat(const cost_query& q) {
    double n = q.nranks;
    return {
        static_cast<double>(ceil_log2(q.nranks)), (n - 1) / n, true,
        "Lu-CA App. A; per-round payload grows 1, 2, 4 … blocks (docs/references.md#pat-payload); "
        "single-port = per-edge (one partner in, one out per round)"};
}

const algorithm allgather_pat{
    "pat",
    collective::allgather,
    "N translated binomial trees, distances ⌈N/2⌉, ⌈N/4⌉, …, 1 (farthest first)",
    "⌈log2N⌉α + (N-1)/N·M/BW",
    "any N, any count",
    any_call,
    build_allgather,
    cost_pat};
const algorithm reduce_scatter_pat{
    "pat",
    collective::reduce_scatter,
    "the allgather trees reversed: distances 1, 2, …, ⌈N/2⌉, summing on the way in",
    "⌈log2N⌉α + (N-1)/N·M/BW",
    "any N, any count",
    any_call,
    build_reduce_scatter,
    cost_pat};

}  // namespace

std::vector<const algorithm*> family_pat() {
    return {&reduce_scatter_pat, &allgather_pat};
}

}  // namespace loom::algorithms
