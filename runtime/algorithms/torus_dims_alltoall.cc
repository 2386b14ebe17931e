// SPDX-License-Identifier: Apache-2.0
// Dimension-decomposed all-to-all `dims` (Lu-TM §3.6 "alternative schedule", §4.2), part of
// the torus_dims family (torus_dims.cc has the family's nomenclature).
//
// How it works
//   Phase i (active dims in order 0, 1, ...) moves every chunk along dim i to its
//   destination's coordinate there, on the dim-i lines only. A chunk held at any time is
//   named by its "slot" w: w_j = source coordinate for the dims already done, destination
//   coordinate for the rest; it sits at slot rank_of(w) of a buffer laid out like the
//   send buffer. So the input is the first phase's layout (w = destination), the output the
//   last one's (w = source), and phases in between alternate between scratch and output.
//   In phase i, line position p holds for every position q one "packet": the N/d_i chunks
//   with w_i = q (|B| = M/d_i bytes; a strided set, packed with local copies). It reaches q
//   store-and-forward, one hop per round, in bundles: a bundle is the packets that cross
//   one link in one round, landed where the next round's bundle is sent from (forwarded
//   packets stay in place, delivered ones are unpacked, the sender's own are packed in).
//   Torus line (ring relay, both directions): position p sends in round 1 all packets for
//     distances 1..⌊(d-1)/2⌋ each way (nearest first) and, for even d ≥ 4, half of the
//     antipodal packet each way (docs/references.md#dor-ties's split halves, so `ties` does not
//     matter); each receiver keeps the first packet and forwards the rest. d = 2: one packet, one
//     link. ⌊d/2⌋ rounds.
//   Mesh line (open): packet (s, q) leaves s in round d-q and travels without stopping, so
//     it arrives in round d-1-s. In round t the link p→p+1 carries packets (s, d+p-t-s)
//     for s in [max(0, p+1-t), min(p, d-t-1)]: one contiguous run of sources that grows by
//     the sender's own packet or shrinks by the receiver's. Leftward is the mirror. With
//     this farthest-first timing the rounds' largest bundles add up to ⌊d²/4⌋ packets,
//     the middle link's whole load, so no lockstep schedule of d-1 rounds does better;
//     sending every packet in round 1 adds up to d(d-1)/2 ((d-1)/2·M a phase).
//
// Cost (lockstep rounds, per-edge; single-port the same: the links are physical), summed
// over the active dims, |B| = M/d:
//   torus d = 2        1 α + 1/2 · M/BW    (the single link carries M/2;
//   docs/references.md#dims-a2a-pairs) torus odd d        (d-1)/2 α + (d²-1)/(8d) · M/BW torus even
//   d ≥ 4   d/2 α + d/8 · M/BW  (exact when the antipodal packet, N/d·count
//                      elements, splits evenly; else half an element more per round)
//   mesh               (d-1) α + ⌊d²/4⌋/d · M/BW   (d/4 for even d)
//   so n_alpha = diameter on both shapes (docs/references.md#torus-a2a-alpha), and every BW term
//   equals the busiest link's load (the per-phase bisection bound). Lu-TM §3.6 approximates the
//   torus BW term by Σd_i/8 and Lu-TM §4.2 the mesh one by Σd_i/4: those hold for even d_i ≥ 4
//   (torus) and even d_i (mesh); odd d_i do better and a torus d_i = 2 worse
//   (docs/references.md#a2a-bound-range, docs/references.md#dims-a2a-pairs). Flat DOR relay
//   (alltoall "dor-relay") has d_max/8 instead of Σ: the decomposition idles the other dims' links
//   in every phase (Lu-TM §3.6 limitation 1). Scratch: one layout buffer (N·count) when two or more
//   dims are active, plus the bundle frames of one phase (≈ d²/8 packets a direction on a torus, ≈
//   d²/4 on a mesh).
//
// Constraints
//   torus:, ring: and mesh: shapes, any dims, any count (elements per destination).
#include <algorithm>

#include "base/check.hh"
#include "families.hh"
#include "ring_patterns.hh"
#include "topology/lines.hh"
#include "util.hh"

namespace loom::algorithms {

status torus_dims_applicable(const call& c);               // torus_dims.cc
cost torus_dims_not_applicable(const topology::shape& t);  // torus_dims.cc

namespace {

// One phase's line: d positions; a packet is `outer` runs of `stride` chunks of `count`.
struct line_geom {
    int d;
    bool wraps;
    int64_t outer, stride, count;
    int64_t packet() const { return outer * stride * count; }
};

// Packet (src → dst) on the line, or its packed elements [e0, e1) (an antipodal half).
struct packet {
    int src, dst;
    int64_t e0, e1;
    int64_t size() const { return e1 - e0; }
    bool operator==(const packet&) const = default;
};

// Ring relay: what source s sends toward s+dir, nearest first.
std::vector<packet> ring_list(const line_geom& g, int s, int dir) {
    std::vector<packet> out;
    int64_t whole = g.packet(), half = whole - whole / 2;
    for (int k = 1; k <= (g.d - 1) / 2; ++k) {
        out.push_back({s, mod(s + dir * k, g.d), 0, whole});
    }
    if (g.d == 2 && dir > 0) {
        out.push_back({s, mod(s + 1, 2), 0, whole});
    } else if (g.d >= 4 && g.d % 2 == 0) {
        int anti = mod(s + g.d / 2, g.d);
        out.push_back(dir > 0 ? packet{s, anti, 0, half} : packet{s, anti, half, whole});
    }
    return out;
}

// The bundle position p sends toward p+dir in round t (1-based), in order.
std::vector<packet> bundle(const line_geom& g, int p, int dir, int t) {
    std::vector<packet> out;
    if (g.wraps) {
        auto list = ring_list(g, mod(p - dir * (t - 1), g.d), dir);
        if (t - 1 < static_cast<int>(list.size())) {
            out.assign(list.begin() + (t - 1), list.end());
        }
        return out;
    }
    int d = g.d, x = dir > 0 ? p : d - 1 - p;  // mirror the leftward flow
    if (x < 0 || x >= d - 1) {
        return out;
    }
    for (int s = std::max(0, x + 1 - t); s <= std::min(x, d - t - 1); ++s) {
        int q = d + x - t - s;
        out.push_back(dir > 0 ? packet{s, q, 0, g.packet()}
                              : packet{d - 1 - s, d - 1 - q, 0, g.packet()});
    }
    return out;
}

int64_t total(const std::vector<packet>& v) {
    int64_t n = 0;
    for (const auto& k : v) {
        n += k.size();
    }
    return n;
}

// One round's frame at one position and direction: the bundle it sends from `send` and
// the bundle of the round before, landed in `landing` so that forwarded packets sit where
// they are sent from. Own packets are packed in at their offsets, delivered ones unpacked.
struct frame {
    region send, landing;
    bool sends = false, lands = false;  // a message (possibly of 0 elements) goes / comes
    std::vector<std::pair<packet, int64_t>> own, delivered;
};

// Splits a bundle into [leading packets with pred][middle][trailing packets with pred].
void split(const std::vector<packet>& v, bool (*pred)(const packet&, int), int p, size_t* lead,
           size_t* trail) {
    *lead = 0;
    while (*lead < v.size() && pred(v[*lead], p)) {
        ++*lead;
    }
    *trail = 0;
    while (*trail + *lead < v.size() && pred(v[v.size() - 1 - *trail], p)) {
        ++*trail;
    }
}

bool is_own(const packet& k, int p) {
    return k.src == p;
}
bool is_mine(const packet& k, int p) {
    return k.dst == p;
}

result<frame> make_frame(const std::vector<packet>& in, const std::vector<packet>& out, int p,
                         int64_t base) {
    size_t dl, dt, ol, ot;
    split(in, is_mine, p, &dl, &dt);
    split(out, is_own, p, &ol, &ot);
    std::vector<packet> fwd_in(in.begin() + dl, in.end() - dt);
    std::vector<packet> fwd_out(out.begin() + ol, out.end() - ot);
    if (fwd_in != fwd_out || (dl && ol) || (dt && ot)) {
        return internal_error("alltoall dims: bundles do not nest at position " +
                              std::to_string(p));
    }
    auto part = [](const std::vector<packet>& v, size_t a, size_t b) {
        return std::vector<packet>(v.begin() + a, v.begin() + b);
    };
    int64_t del_pre = total(part(in, 0, dl)), own_pre = total(part(out, 0, ol));
    int64_t del_post = total(part(in, in.size() - dt, in.size()));
    int64_t own_post = total(part(out, out.size() - ot, out.size()));
    int64_t mid = base + std::max(del_pre, own_pre), fwd = total(fwd_in);
    frame f;
    f.sends    = !out.empty();
    f.lands    = !in.empty();
    f.send     = schedule::tmp(mid - own_pre, own_pre + fwd + own_post);
    f.landing  = schedule::tmp(mid - del_pre, del_pre + fwd + del_post);
    int64_t at = mid - own_pre;
    for (size_t j = 0; j < out.size(); at += out[j++].size()) {
        if (j < ol || j >= out.size() - ot) {
            f.own.push_back({out[j], at});
        }
    }
    at = mid - del_pre;
    for (size_t j = 0; j < in.size(); at += in[j++].size()) {
        if (j < dl || j >= in.size() - dt) {
            f.delivered.push_back({in[j], at});
        }
    }
    return f;
}

// A chain of local steps; the first waits for `deps` (the phase start).
struct local_chain {
    std::vector<step_id> deps;
    void copy(schedule::builder& b, region dst, region src, step_id also = no_step) {
        auto d = deps;
        d.push_back(also);
        deps.assign(1, b.local_copy(dst, src, d));
    }
};

// Copies the packed elements [e0, e1) of the chunks with w_i = pos between a slot-layout
// buffer and a contiguous region starting at `packed` (to_packed: layout → region).
void copy_packed(schedule::builder& b, const line_geom& g, vector_at layout, int pos, int64_t e0,
                 int64_t e1, int64_t packed, bool to_packed, local_chain& chain,
                 step_id also = no_step) {
    int64_t run = g.stride * g.count;
    for (int64_t a = run > 0 ? e0 / run : g.outer; a < g.outer && a * run < e1; ++a) {
        int64_t r0 = std::max(e0, a * run), r1 = std::min(e1, (a + 1) * run);
        if (r1 <= r0) {
            continue;
        }
        region lay{layout.offset + (a * g.d + pos) * run + (r0 - a * run), r1 - r0, layout.buf};
        region pk = schedule::tmp(packed + (r0 - e0), r1 - r0);
        chain.copy(b, to_packed ? pk : lay, to_packed ? lay : pk, also);
    }
}

struct phase_in {
    int p;
    std::vector<int> members;
    line_geom g;
    vector_at cur, next;
    int64_t frames_at;  // scratch offset of this phase's frames
};

int next_of(const phase_in& ph, int dir) {
    int d = ph.g.d;
    return ph.members[ph.g.wraps ? mod(ph.p + dir, d) : ph.p + dir];
}

int rounds_of(const line_geom& g) {
    return g.wraps ? g.d / 2 : g.d - 1;
}

// The frames of both directions ([0]: toward p+1, [1]: toward p-1), rounds 1..T+1, laid
// out from ph.frames_at; returns the end of the last one.
result<int64_t> lay_frames(const phase_in& ph, std::vector<frame> (&frames)[2]) {
    const line_geom& g = ph.g;
    int64_t at         = ph.frames_at;
    for (int di = 0; di < 2; ++di) {
        int dir = di == 0 ? 1 : -1, from = g.wraps ? mod(ph.p - dir, g.d) : ph.p - dir;
        for (int t = 1; t <= rounds_of(g) + 1; ++t) {
            auto out = t <= rounds_of(g) ? bundle(g, ph.p, dir, t) : std::vector<packet>{};
            auto in  = t > 1 && from >= 0 && from < g.d ? bundle(g, from, dir, t - 1)
                                                        : std::vector<packet>{};
            LOOM_ASSIGN(frame f, make_frame(in, out, ph.p, at));
            at = std::max(f.send.end(), f.landing.end());
            frames[di].push_back(std::move(f));
        }
    }
    return at;
}

// One phase at one rank. Returns the phase's last steps (all of them: the next phase
// rewrites what this one reads).
result<std::vector<step_id>> a2a_phase(schedule::builder& b, const phase_in& ph,
                                       const std::vector<step_id>& start) {
    const line_geom& g = ph.g;
    int rounds         = rounds_of(g);
    std::vector<frame> frames[2];
    LOOM_ASSIGN(int64_t end, lay_frames(ph, frames));
    b.need_scratch(end);
    local_chain chain{start};
    int64_t run = g.stride * g.count;
    for (int64_t a = 0; a < g.outer && run > 0; ++a) {  // my own chunks keep their slots
        int64_t off = (a * g.d + ph.p) * run;
        chain.copy(b, {ph.next.offset + off, run, ph.next.buf},
                   {ph.cur.offset + off, run, ph.cur.buf});
    }
    for (auto& dir_frames : frames) {
        for (auto& f : dir_frames) {
            for (auto& [k, off] : f.own) {
                copy_packed(b, g, ph.cur, k.dst, k.e0, k.e1, off, true, chain);
            }
        }
    }
    std::vector<step_id> packed = chain.deps;
    step_id sent[2] = {no_step, no_step}, got[2] = {no_step, no_step};
    for (int t = 1; t <= rounds; ++t) {
        for (int di = 0; di < 2; ++di) {
            const frame& f = frames[di][t - 1];
            if (f.sends) {  // after its own packets are in and the forwarded ones landed
                auto deps = packed;
                deps.push_back(sent[di]);
                deps.push_back(got[di]);
                sent[di] = b.send(next_of(ph, di == 0 ? 1 : -1), f.send, deps);
            }
        }
        for (int di = 0; di < 2; ++di) {
            const frame& f = frames[di][t];
            if (!f.lands) {
                continue;
            }
            auto deps = got[di] == no_step ? start : std::vector<step_id>{};
            deps.push_back(got[di]);
            got[di] = b.recv(next_of(ph, di == 0 ? -1 : 1), f.landing, deps);
            for (auto& [k, off] : f.delivered) {
                copy_packed(b, g, ph.next, k.src, k.e0, k.e1, off, false, chain, got[di]);
            }
        }
    }
    auto last = chain.deps;
    last.insert(last.end(), {sent[0], sent[1], got[0], got[1]});
    return last;
}

status build_alltoall(const call& c, int rank, schedule::builder& b) {
    const auto& t         = c.topo;
    int64_t buffer        = int64_t{c.nranks} * c.count;
    std::vector<int> dims = topology::active_dims(t);
    if (dims.empty()) {
        b.local_copy(schedule::out(0, buffer), schedule::in(0, buffer));
        return status::ok();
    }
    // Layouts alternate between scratch and the output so that the last phase writes the
    // output; the first reads the input.
    int64_t frames_at = dims.size() > 1 ? buffer : 0;
    vector_at cur{buffer_id::input, 0};
    std::vector<step_id> at;
    for (size_t k = 0; k < dims.size(); ++k) {
        int dim = dims[k], d = t.dims()[dim];
        int64_t stride = 1, outer = 1;
        for (int j = 0; j < t.ndims(); ++j) {
            if (j != dim) {
                (j < dim ? outer : stride) *= t.dims()[j];
            }
        }
        phase_in ph;
        ph.p         = static_cast<int>(rank / stride % d);
        ph.members   = topology::dim_line(t, rank, dim);
        ph.g         = {d, t.wraps(), outer, stride, c.count};
        ph.next      = (dims.size() - 1 - k) % 2 == 0 ? vector_at{buffer_id::output, 0}
                                                      : vector_at{buffer_id::scratch, 0};
        ph.cur       = cur;
        ph.frames_at = frames_at;
        LOOM_ASSIGN(at, a2a_phase(b, ph, at));
        cur = ph.next;
    }
    return status::ok();
}

// Per-phase coefficients of one line (see the header's table).
void phase_cost(int d, bool wraps, double* a, double* m) {
    if (!wraps) {
        *a = d - 1;
        *m = static_cast<double>((int64_t{d} * d) / 4) / d;
    } else if (d == 2) {
        *a = 1;
        *m = 0.5;
    } else if (d % 2 == 1) {
        *a = (d - 1) / 2;
        *m = (static_cast<double>(d) * d - 1) / (8.0 * d);
    } else {
        *a = d / 2;
        *m = d / 8.0;
    }
}

cost cost_alltoall(const cost_query& q) {
    if (!q.topo.is_lattice()) {
        return torus_dims_not_applicable(q.topo);
    }
    cost out{0, 0, true, ""};
    for (int d : q.topo.dims()) {
        if (d > 1) {
            double a = 0, m = 0;
            phase_cost(d, q.topo.wraps(), &a, &m);
            out.n_alpha += a;
            out.n_beta += m;
        }
    }
    out.note = q.topo.wraps()
                   ? "lockstep per-phase ring relay; Lu-TM §3.6 ≈ diam·α + Σd_i/8·M/BW holds for "
                     "even d_i ≥ 4 (odd d_i: (d²-1)/(8d), d_i = 2: 1/2, "
                     "docs/references.md#a2a-bound-range/A12); exact "
                     "when N/d_i·count is even; single-port = per-edge (physical links)"
                   : "lockstep farthest-first open-line relay; Lu-TM §4.2 ≈ diam·α + Σd_i/4·M/BW "
                     "holds for even d_i (odd d_i: (d²-1)/(4d)); single-port = per-edge "
                     "(physical links)";
    return out;
}

const algorithm alltoall_dims{
    "dims",
    collective::alltoall,
    "one all-to-all per dim on that dim's lines: ring relay (torus) or open-line relay (mesh)",
    "Σ_i [⌊d_i/2⌋α + d_i/8·M/BW] torus (d_i = 2: 1/2; odd: (d²-1)/8d), "
    "Σ_i [(d_i-1)α + ⌊d_i²/4⌋/d_i·M/BW] mesh",
    "torus, ring or mesh, any dims, any count",
    torus_dims_applicable,
    build_alltoall,
    cost_alltoall,
    /*topology_aware=*/true};

}  // namespace

const algorithm* torus_dims_alltoall() {
    return &alltoall_dims;
}

}  // namespace loom::algorithms
