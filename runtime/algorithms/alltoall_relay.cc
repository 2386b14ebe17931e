// SPDX-License-Identifier: Apache-2.0
// Ring relay all-to-all `ring-relay`: every chunk travels the logical ring, forwarded hop by
// hop by the ranks it passes, in lockstep waves (Lu-CA §7.1). The fabric's own lattice relay,
// asynchronous, is `dor-relay` (alltoall_dor_relay.cc).
//
// How it works
//   A "chunk" is the `count` elements rank s sends to rank d (input block d of s, output
//   block s of d). Its route is on the logical bidirectional ring 0 → 1 → … → N-1 → 0
//   whatever the fabric, each chunk on the shortest arc, antipodal ties toward + (Lu-CA
//   §7.1), from fabric/routing's ring:N.
//   Lockstep structure ("waves"): every chunk moves one hop per round, starting in round 1,
//   so a chunk with an h-hop route arrives in round h and the last arrives in round
//   ⌊N/2⌋ (the longest route). In round t, all chunks that take their t-th hop over the same
//   directed link travel as ONE message; a link therefore carries at most one message per
//   round. Within a message chunks are ordered by (route length, source, destination), the
//   same order on both ends. A rank receives each message into fresh scratch ("landing"),
//   copies the chunks addressed to it into its output, and sends the rest on in the next
//   round: straight from the landing region when they lie there contiguously and in order
//   (on a ring they always do: the receiver's chunk is the shortest, so it comes first), or
//   after packing them into a staging region. The own block is a local copy.
//   A message made only of chunks for the receiver whose output blocks are consecutive is
//   received straight into the output.
//
// Cost (chunk c = count·dtype = M/N; M = the whole send buffer, schedule::payload_bytes)
//   The verifier's lockstep count is exactly: n_alpha = ⌊N/2⌋ rounds, and per-edge
//   n_beta·M = Σ over rounds of the largest message that round (W chunks).
//   D = ⌊N/2⌋: the + link of every rank carries D-t+1 chunks in round t, the − link fewer,
//   so W = the busiest link's total L = D(D+1)/2:
//       per-edge     ⌊N/2⌋·α + L/N · M/BW,  L = N(N+2)/8 (N even), (N²-1)/8 (N odd)
//       single-port  ⌊N/2⌋·α + ⌊N²/4⌋/N · M/BW (both directions' messages share the port
//                    each round: Σ = L+ + L- = ⌊N²/4⌋ chunks)
//     Lu-CA §7.1/§7.3 state (N-1)α + (N-1)/N·M/BW. docs/references.md#ring-relay-load: the busiest
//     link carries L chunks, not N-1 (N = 8: 10 > 7; N = 5: 3 < 4); equal only at N = 2, 4. The α
//     term is ⌊N/2⌋, not N-1, because loom sends the chunks sharing a link and round as one message
//     (Lu-CA's N = 4 table sends them one per step: 3α + 3/4·M/BW; loom: 2α + 3/4·M/BW).
//
// Constraints
//   Any N ≥ 1, any count, any topology (the ring is logical; on a torus or mesh the fabric
//   carries each ring hop, which these forms do not model). Its ties always go + (Lu-CA §7.1).
//   It ignores `segments` (one wave per chunk).
#include <algorithm>
#include <tuple>

#include "families.hh"
#include "util.hh"

namespace loom::algorithms {

const algorithm* alltoall_dor_relay();  // alltoall_dor_relay.cc

namespace {

// One chunk as this rank sees it: its route position and where it is now.
struct chunk {
    routing::transit t;       // t.length (hops of the whole route) leads the message order
    region at     = {};       // where it lies on this rank
    step_id ready = no_step;  // the step that put it there (no_step: the input buffer)
};

auto message_key(const chunk& c) {
    return std::make_tuple(c.t.length, c.t.src, c.t.dst);
}

// The chunks of one message, in message order, and the messages of one rank in emission
// order: by round, then peer.
struct message {
    int round;
    int peer;
    std::vector<int> chunks;  // indices into the rank's chunk list
};

class relay_builder {
  public:
    relay_builder(const call& c, int rank, schedule::builder& b) : c_(c), rank_(rank), b_(b) {}
    void run(const topology::shape& shape, tie_rule ties);

  private:
    std::vector<message> group(bool outgoing) const;
    void send(const message& m);
    void receive(const message& m);
    int64_t scratch(int64_t elements) {
        int64_t at = scratch_top_;
        scratch_top_ += elements;
        return at;
    }

    const call& c_;
    int rank_;
    schedule::builder& b_;
    std::vector<chunk> chunks_;
    int64_t scratch_top_ = 0;
};

// Outgoing messages leave in round hop+1 toward `next`; incoming ones arrive in round hop
// from `prev`. Both ends group the same chunks and sort them by message_key.
std::vector<message> relay_builder::group(bool outgoing) const {
    // Keys copied out once: a ring rank relays ~N²/4 chunks, so the sort dominates.
    struct keyed {
        std::tuple<int, int, int, int, int> key;  // round, peer, then message_key
        int index;
    };
    std::vector<keyed> order;
    for (int i = 0; i < static_cast<int>(chunks_.size()); ++i) {
        const chunk& c = chunks_[i];
        int peer       = outgoing ? c.t.next : c.t.prev;
        if (peer >= 0) {
            auto [length, src, dst] = message_key(c);
            order.push_back({{outgoing ? c.t.hop + 1 : c.t.hop, peer, length, src, dst}, i});
        }
    }
    std::sort(order.begin(), order.end(),
              [](const keyed& a, const keyed& b) { return a.key < b.key; });
    std::vector<message> out;
    for (const auto& k : order) {
        int round = std::get<0>(k.key), peer = std::get<1>(k.key);
        if (out.empty() || out.back().round != round || out.back().peer != peer) {
            out.push_back({round, peer, {}});
        }
        out.back().chunks.push_back(k.index);
    }
    return out;
}

// Sends straight from where the chunks lie when they form one contiguous run produced by
// one step; otherwise packs them (a chain of copies, one per such run) into staging first.
void relay_builder::send(const message& m) {
    const int64_t blk = c_.count;
    auto joins        = [&](int a, int b) {
        const chunk &x = chunks_[a], &y = chunks_[b];
        return x.at.buf == y.at.buf && x.at.end() == y.at.offset && x.ready == y.ready;
    };
    bool direct = true;
    for (size_t k = 1; k < m.chunks.size(); ++k) {
        direct = direct && joins(m.chunks[k - 1], m.chunks[k]);
    }
    const chunk& first = chunks_[m.chunks.front()];
    const auto n       = static_cast<int64_t>(m.chunks.size());
    if (direct) {
        b_.send(m.peer, {first.at.offset, n * blk, first.at.buf}, {first.ready});
        return;
    }
    int64_t staging = scratch(n * blk);
    step_id last    = no_step;
    for (size_t k = 0; k < m.chunks.size();) {
        size_t end = k + 1;
        while (end < m.chunks.size() && joins(m.chunks[end - 1], m.chunks[end])) {
            ++end;
        }
        const chunk& run = chunks_[m.chunks[k]];
        auto len         = static_cast<int64_t>(end - k) * blk;
        last = b_.local_copy(schedule::tmp(staging + static_cast<int64_t>(k) * blk, len),
                             {run.at.offset, len, run.at.buf}, {last, run.ready});
        k    = end;
    }
    b_.send(m.peer, schedule::tmp(staging, n * blk), {last});
}

// Receives into the output when the whole message is for this rank and lands on
// consecutive output blocks; otherwise into a landing region, copying out this rank's
// chunks (consecutive sources in one copy) and leaving the others where they landed.
void relay_builder::receive(const message& m) {
    const int64_t blk = c_.count;
    const auto n      = static_cast<int64_t>(m.chunks.size());
    auto mine         = [&](size_t k) { return chunks_[m.chunks[k]].t.next < 0; };
    auto src_of       = [&](size_t k) { return chunks_[m.chunks[k]].t.src; };
    bool straight     = true;
    for (size_t k = 0; k < m.chunks.size(); ++k) {
        straight = straight && mine(k) && (k == 0 || src_of(k) == src_of(k - 1) + 1);
    }
    if (straight) {
        b_.recv(m.peer, schedule::out(src_of(0) * blk, n * blk));
        return;
    }
    int64_t landing = scratch(n * blk);
    step_id got     = b_.recv(m.peer, schedule::tmp(landing, n * blk));
    for (size_t k = 0; k < m.chunks.size(); ++k) {
        chunk& c = chunks_[m.chunks[k]];
        c.at     = schedule::tmp(landing + static_cast<int64_t>(k) * blk, blk);
        c.ready  = got;
    }
    for (size_t k = 0; k < m.chunks.size();) {
        if (!mine(k)) {
            ++k;
            continue;
        }
        size_t end = k + 1;
        while (end < m.chunks.size() && mine(end) && src_of(end) == src_of(end - 1) + 1) {
            ++end;
        }
        auto len = static_cast<int64_t>(end - k) * blk;
        b_.local_copy(schedule::out(src_of(k) * blk, len),
                      schedule::tmp(landing + static_cast<int64_t>(k) * blk, len), {got});
        k = end;
    }
}

void relay_builder::run(const topology::shape& shape, tie_rule ties) {
    const int64_t blk = c_.count;
    b_.local_copy(schedule::out(rank_ * blk, blk), schedule::in(rank_ * blk, blk));
    for (const auto& t : routing::transits_through(shape, rank_, ties)) {
        chunk c;
        c.t = t;
        if (t.src == rank_) {
            c.at = schedule::in(t.dst * blk, blk);
        }
        chunks_.push_back(c);
    }
    auto out = group(true), in = group(false);
    // Round by round: a round's sends use only chunks that arrived in earlier rounds.
    size_t o = 0, i = 0;
    while (o < out.size() || i < in.size()) {
        int round = std::min(o < out.size() ? out[o].round : INT32_MAX,
                             i < in.size() ? in[i].round : INT32_MAX);
        for (; o < out.size() && out[o].round == round; ++o) {
            send(out[o]);
        }
        for (; i < in.size() && in[i].round == round; ++i) {
            receive(in[i]);
        }
    }
    b_.need_scratch(scratch_top_);
}

topology::shape logical_ring(int n) {
    return *topology::shape::parse("ring:" + std::to_string(n));
}

status build_ring_relay(const call& c, int rank, schedule::builder& b) {
    relay_builder(c, rank, b).run(logical_ring(c.nranks), tie_rule::toward_plus);
    return status::ok();
}

cost cost_ring_relay(const cost_query& q) {
    const int64_t n = q.nranks, d = n / 2;
    const double busiest = static_cast<double>(d * (d + 1) / 2);
    if (q.ports == port_model::single_port) {
        return {static_cast<double>(d), static_cast<double>(n * n / 4) / n, true,
                "single-port: both ring directions share the port, ⌊N²/4⌋ chunks; "
                "⌊N/2⌋ rounds (chunks sharing a link and round go as one message)"};
    }
    return {static_cast<double>(d), busiest / n, true,
            "busiest link carries ⌊N/2⌋(⌊N/2⌋+1)/2 chunks (docs/references.md#ring-relay-load: "
            "N(N+2)/8 even, "
            "(N²-1)/8 odd; Lu-CA's (N-1)/N only at N = 2, 4); ⌊N/2⌋ rounds, not N-1, since "
            "chunks sharing a link and round go as one message"};
}

const algorithm alltoall_ring_relay{
    "ring-relay",
    collective::alltoall,
    "bidirectional logical ring, shortest arc (ties +), forwarded hop by hop in waves",
    "⌊N/2⌋α + ⌊N/2⌋(⌊N/2⌋+1)/(2N)·M/BW",
    "any N, any count, any topology (logical ring)",
    any_call,
    build_ring_relay,
    cost_ring_relay};
}  // namespace

std::vector<const algorithm*> family_alltoall_relay() {
    return {&alltoall_ring_relay, alltoall_dor_relay()};
}

}  // namespace loom::algorithms
