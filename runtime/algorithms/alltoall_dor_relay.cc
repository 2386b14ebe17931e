// SPDX-License-Identifier: Apache-2.0
// Asynchronous DOR relay all-to-all `dor-relay`: every chunk travels its dimension-ordered
// route of neighbour links, forwarded by each rank it passes as soon as it has arrived
// (Lu-TM §3.6: "A2A ring-relay doesn't step-sync"; docs/references.md#dor-relay-async).
//
// How it works
//   A "chunk" is the `count` elements rank s sends to rank d (input block d of s, output
//   block s of d), cut into P "segments" (the call's segments, at most one per element). Its
//   route comes from fabric/routing: the fabric's torus, ring or mesh, dimension-ordered
//   (dimension 0 first), shortest arc with the wraparound where there is one, ties by the
//   call's `ties` rule (docs/references.md#dor-ties).
//   Each segment crosses each link of its route as a message of its own. A rank receives a
//   segment it relays into its own landing slot of scratch and sends it on with a
//   dependency on that receive alone: no step waits for a round, a bundle or another
//   chunk, so a link is held back only by its own queue. Segments addressed to the rank are
//   received straight into the output; the rank's own segments leave from the input; the
//   own block is a local copy.
//   Message order on a link (both ends list it alike, step.hh's matching rule): by the hop
//   number at which the segment crosses it, then segment, then the longer route first, then
//   source, destination. The executors do not serialise a link's messages in that order: a
//   message whose segment has arrived starts as soon as the link is free (the engine's wire
//   tags carry the message's index; fabric/sim serves a link's heads as they come, the
//   rank's own segments in list order, so the ones with the longest way to go leave first).
//
// Cost (c = count·dtype = M/N)
//   L = the chunks on the busiest directed link for the tie rule (routing::count_all_to_all,
//   counted per dimension in O(Σ d_i), any size), D = the diameter (the longest route):
//     ≈ D·α + L/N·M/BW
//   Lu-TM §3.6/§5.1's asynchronous per-chunk model (their d_max/8 made exact:
//   docs/references.md#a2a-bound-range). Not an exact form (cost::exact = false): no
//   schedule beats α + L·c/BW (the busiest link's occupancy plus its last message's α), and
//   how close a run comes depends on whether the busiest link ever waits for a chunk still
//   on its way. Measured in fabric/sim with α = 0: exactly L·c/BW on rings, on meshes
//   4x4, 3x5 (P = 1) and 8x8 (P = 4), tori 2x2, 4x4 and 8x4 (toward_plus) and 3x4x5;
//   within 1.2·L·c/BW elsewhere among the fabric tests (8x8 source_parity: 76 chunk times
//   against L = 64, lockstep 103); docs/references.md#dor-relay-async has the table.
//   Segments (P) shorten the waits at the start and the end of a link's queue (5x5: 18 →
//   16.5 chunk times at P = 4) and cost P times the messages.
//   Single-port: the same (the links of a lattice are physical).
//
// Constraints
//   ring, torus or mesh (any dimensions, any N ≥ 1), any count, P ≥ 1; not applicable on
//   star or full mesh, where every pair has its own hop and there is nothing to relay.
#include <algorithm>
#include <tuple>

#include "families.hh"
#include "util.hh"

namespace loom::algorithms {

const algorithm* alltoall_dor_relay();

namespace {

// One segment crossing one link of this rank: received from `peer` (incoming) or sent to it.
struct crossing {
    int hop;  // the hop number of the route at which it crosses this link (1 = first)
    int seg;
    int length;  // hops of the whole route
    int src, dst;
    int peer;
    auto key() const { return std::make_tuple(hop, seg, -length, src, dst); }
};

status build(const call& c, int rank, schedule::builder& b) {
    const int64_t blk = c.count;
    const int p       = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(c.segments, blk)));
    b.local_copy(schedule::out(rank * blk, blk), schedule::in(rank * blk, blk));
    auto transits = routing::transits_through(c.topo, rank, c.ties);
    std::vector<crossing> in, out;
    in.reserve(transits.size() * p);
    out.reserve(transits.size() * p);
    for (const auto& t : transits) {
        for (int g = 0; g < p; ++g) {
            if (t.prev >= 0) {
                in.push_back({t.hop, g, t.length, t.src, t.dst, t.prev});
            }
            if (t.next >= 0) {
                out.push_back({t.hop + 1, g, t.length, t.src, t.dst, t.next});
            }
        }
    }
    auto by_key = [](const crossing& x, const crossing& y) { return x.key() < y.key(); };
    std::sort(in.begin(), in.end(), by_key);
    std::sort(out.begin(), out.end(), by_key);

    // Where each relayed segment landed: keyed like the outgoing crossing that takes it on.
    struct landed {
        std::tuple<int, int, int, int, int> key;  // the crossing's key it leaves with
        int64_t offset;
        step_id got;
    };
    std::vector<landed> landings;
    int64_t scratch_top = 0;
    auto seg_region     = [&](buffer_id buf, int block, int g) {
        int64_t off = segment_offset(blk, p, g);
        return region{block * blk + off, segment_size(blk, p, g), buf};
    };
    // Hop by hop, sends before the receives of the same hop (they use earlier arrivals).
    size_t o = 0, i = 0;
    while (o < out.size() || i < in.size()) {
        int hop = std::min(o < out.size() ? out[o].hop : INT32_MAX,
                           i < in.size() ? in[i].hop : INT32_MAX);
        for (; o < out.size() && out[o].hop == hop; ++o) {
            const crossing& x = out[o];
            if (x.src == rank) {
                b.send(x.peer, seg_region(buffer_id::input, x.dst, x.seg));
                continue;
            }
            auto it           = std::lower_bound(landings.begin(), landings.end(), x.key(),
                                                 [](const landed& l, const auto& k) { return l.key < k; });
            const int64_t len = segment_size(blk, p, x.seg);
            b.send(x.peer, schedule::tmp(it->offset, len), {it->got});
        }
        size_t first_new = landings.size();
        for (; i < in.size() && in[i].hop == hop; ++i) {
            const crossing& x = in[i];
            if (x.dst == rank) {
                b.recv(x.peer, seg_region(buffer_id::output, x.src, x.seg));
                continue;
            }
            const int64_t len = segment_size(blk, p, x.seg);
            step_id got       = b.recv(x.peer, schedule::tmp(scratch_top, len));
            landings.push_back({{x.hop + 1, x.seg, -x.length, x.src, x.dst}, scratch_top, got});
            scratch_top += len;
        }
        // Landings of one hop are already in key order; keep the whole list sorted.
        std::inplace_merge(landings.begin(), landings.begin() + static_cast<long>(first_new),
                           landings.end(),
                           [](const landed& l, const landed& r) { return l.key < r.key; });
    }
    b.need_scratch(scratch_top);
    return status::ok();
}

status applicable(const call& c) {
    if (!c.topo.is_lattice()) {
        return not_applicable("needs a ring, torus or mesh; on " + c.topo.to_string() +
                              " every pair is one hop apart and there is nothing to relay "
                              "(use pairwise)");
    }
    return status::ok();
}

std::string fraction(int64_t num, int64_t den) {
    return std::to_string(num) + "/" + std::to_string(den);
}

cost predict_cost(const cost_query& q) {
    const topology::shape& s = q.topo;
    if (!s.is_lattice() || s.size() != q.nranks) {
        return {0, 0, false, "not applicable: needs a ring, torus or mesh of N ranks"};
    }
    const int64_t n = q.nranks;
    auto load       = routing::count_all_to_all(s, q.ties);
    cost out{static_cast<double>(load.rounds), static_cast<double>(load.busiest_link) / n, false,
             ""};
    const int64_t text_den = s.wraps() ? 8 : 4;
    bool text_holds        = load.busiest_link * text_den == int64_t{s.max_dim()} * n;
    out.note =
        "asynchronous relay, the busiest-link model diam·α + L/N·M/BW with L = " +
        std::to_string(load.busiest_link) + " chunks on the busiest link (" +
        std::string(routing::tie_rule_name(q.ties)) + ") = " + fraction(load.busiest_link, n) +
        "·M/BW; not exact: the run takes at least α + L/N·M/BW and reaches that BW term "
        "where the busiest link never waits for a chunk "
        "(docs/references.md#dor-relay-async); Lu-TM's d_max/" +
        std::to_string(text_den) + " = " + fraction(s.max_dim(), text_den) +
        (text_holds ? " holds here" : " does not hold here (docs/references.md#a2a-bound-range)") +
        "; single-port: the same (physical links)";
    return out;
}

const algorithm alltoall_dor_relay_algorithm{
    "dor-relay",
    collective::alltoall,
    "dimension-ordered shortest-arc routes on the lattice, each segment forwarded as soon as "
    "it arrives",
    "≈ diam·α + L/N·M/BW, L = busiest-link chunks (at least α + L/N·M/BW)",
    "ring, torus or mesh; any N, any count, P ≥ 1",
    applicable,
    build,
    predict_cost,
    /*topology_aware=*/true};

}  // namespace

const algorithm* alltoall_dor_relay() {
    return &alltoall_dor_relay_algorithm;
}

}  // namespace loom::algorithms
