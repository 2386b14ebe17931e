// SPDX-License-Identifier: Apache-2.0
// The catalogue: every algorithm family in one table (name -> generator), plus the generic
// parts every generator shares: call validation, channel splitting, whole-schedule assembly.
#include <algorithm>

#include "base/check.hh"
#include "base/wire_tag.hh"
#include "families.hh"
#include "routing/dor.hh"
#include "schedule/verifier.hh"

namespace loom::algorithms {
namespace {

std::vector<const algorithm*> build_catalogue() {
    std::vector<const algorithm*> all;
    for (auto family :
         {family_ring, family_ring_bidirectional, family_binomial, family_scatter_allgather,
          family_double_binary_tree, family_recursive_doubling, family_rabenseifner, family_pat,
          family_bruck, family_alltoall_pairwise, family_alltoall_relay, family_torus_dims,
          family_dims_rabenseifner, family_hier_ring, family_sendrecv, family_inc, family_flat}) {
        auto part = family();
        all.insert(all.end(), part.begin(), part.end());
    }
    // Catalogue order: by primitive, then as the families list them.
    std::stable_sort(all.begin(), all.end(), [](const algorithm* a, const algorithm* b) {
        return a->primitive < b->primitive;
    });
    return all;
}

// Channels split an element-wise collective's vector into independent slices, each run by
// the algorithm on its own tags, so slices progress concurrently (NCCL's channels).
constexpr uint32_t channel_tag_stride = wire::channel_stride;

bool elementwise(collective c) {
    return c == collective::broadcast || c == collective::reduce || c == collective::allreduce ||
           c == collective::sendrecv;
}

void shift_region(schedule::region& r, int64_t io_offset, int64_t scratch_offset) {
    if (r.buf == schedule::buffer_id::input || r.buf == schedule::buffer_id::output) {
        r.offset += io_offset;
    } else if (r.buf == schedule::buffer_id::scratch) {
        r.offset += scratch_offset;
    }
}

}  // namespace

std::string_view port_model_name(port_model p) {
    return p == port_model::per_edge ? "per-edge" : "single-port";
}

bool parse_port_model(std::string_view s, port_model* out) {
    if (s == "per-edge") {
        *out = port_model::per_edge;
    } else if (s == "single-port") {
        *out = port_model::single_port;
    } else {
        return false;
    }
    return true;
}

std::span<const algorithm* const> catalogue() {
    static const std::vector<const algorithm*> all = build_catalogue();
    return all;
}

const algorithm* find(collective coll, std::string_view name) {
    for (const algorithm* a : catalogue()) {
        if (a->primitive == coll && a->name == name) {
            return a;
        }
    }
    return nullptr;
}

std::string names_for(collective coll) {
    std::string out;
    for (const algorithm* a : catalogue()) {
        if (a->primitive == coll) {
            out += (out.empty() ? "" : ", ") + std::string(a->name);
        }
    }
    return out;
}

status check_call(const algorithm& a, const call& c) {
    std::string who = std::string(schedule::collective_name(c.coll)) + " " + std::string(a.name);
    if (c.coll != a.primitive) {
        return invalid_argument(who + ": algorithm is for " +
                                std::string(schedule::collective_name(a.primitive)));
    }
    if (c.nranks < 1) {
        return invalid_argument(who + ": the number of ranks must be at least 1, got " +
                                std::to_string(c.nranks));
    }
    if (c.count < 0) {
        return invalid_argument(who + ": negative element count " + std::to_string(c.count));
    }
    if (schedule::has_root(c.coll) && (c.root < 0 || c.root >= c.nranks)) {
        return invalid_argument(who + ": root " + std::to_string(c.root) + " is outside 0.." +
                                std::to_string(c.nranks - 1));
    }
    if (c.coll == collective::sendrecv && (c.peer < 0 || c.peer >= c.nranks)) {
        return invalid_argument(who + ": peer " + std::to_string(c.peer) + " is outside 0.." +
                                std::to_string(c.nranks - 1));
    }
    if (c.topo.size() != c.nranks) {
        return invalid_argument(who + ": topology " + c.topo.to_string() + " has " +
                                std::to_string(c.topo.size()) + " ranks, the call " +
                                std::to_string(c.nranks));
    }
    if (c.segments < 1 || c.channels < 1) {
        return invalid_argument(who + ": segments and channels must be at least 1");
    }
    if (c.channels > 1 && !elementwise(c.coll)) {
        return not_applicable(who +
                              ": channels > 1 apply to broadcast, reduce, allreduce and "
                              "sendrecv only");
    }
    if (status st = a.applicable(c); !st) {
        return st.prefix(who + ": ");
    }
    return status::ok();
}

result<schedule::rank_schedule> generate_rank(const algorithm& a, const call& c, int rank) {
    schedule::rank_schedule out;
    out.rank = rank;
    if (c.channels == 1) {
        schedule::builder b(out);
        LOOM_CHECK(a.build(c, rank, b));
        return out;
    }
    // Each channel runs the algorithm on its slice; its scratch is stacked after the
    // previous channels' scratch and its tags moved to a channel-private range.
    int64_t scratch_base = 0;
    for (int ch = 0; ch < c.channels; ++ch) {
        call sub     = c;
        sub.channels = 1;
        sub.count    = schedule::block_size(c.count, c.channels, ch);
        int64_t base = schedule::block_offset(c.count, c.channels, ch);
        schedule::rank_schedule part;
        part.rank = rank;
        schedule::builder pb(part);
        LOOM_CHECK(a.build(sub, rank, pb));
        auto first = static_cast<schedule::step_id>(out.steps.size());
        for (auto& st : part.steps) {
            shift_region(st.dst, base, scratch_base);
            shift_region(st.src, base, scratch_base);
            shift_region(st.aux, base, scratch_base);
            if (schedule::is_transfer(st.kind) || schedule::is_inc(st.kind)) {
                st.tag += static_cast<uint32_t>(ch) * channel_tag_stride;
            }
            std::vector<schedule::step_id> deps(part.deps_of(st), part.deps_of(st) + st.ndeps);
            for (auto& d : deps) {
                d += first;
            }
            schedule::builder(out).add(st, deps);
        }
        scratch_base += part.scratch_count;
    }
    out.scratch_count = scratch_base;
    return out;
}

schedule::schedule_info schedule_info_for(const algorithm& a, const call& c) {
    return {c.coll,
            c.nranks,
            c.count,
            c.root,
            c.peer,
            c.dtype_size,
            std::string(a.name),
            c.topo.to_string(),
            c.segments,
            c.channels,
            a.node_local};
}

result<schedule::schedule> generate(const algorithm& a, const call& c) {
    LOOM_CHECK(check_call(a, c));
    schedule::schedule s;
    s.info = schedule_info_for(a, c);
    s.ranks.reserve(c.nranks);
    for (int r = 0; r < c.nranks; ++r) {
        LOOM_ASSIGN(s.ranks.emplace_back(), generate_rank(a, c, r));
    }
    return s;
}

cost_query query_for(const call& c, double bytes, port_model ports) {
    cost_query q;
    q.coll     = c.coll;
    q.nranks   = c.nranks;
    q.bytes    = bytes;
    q.root     = c.root;
    q.peer     = c.peer;
    q.segments = c.segments;
    q.ports    = ports;
    q.ties     = c.ties;
    q.topo     = c.topo;
    return q;
}

cost predict(const algorithm& a, const call& c, double bytes, port_model ports) {
    cost closed = a.predict(query_for(c, bytes, ports));
    if (!c.topo.is_lattice() || a.topology_aware || c.nranks == 1 || bytes <= 0) {
        return closed;
    }
    std::string shape = c.topo.to_string();
    auto first        = generate_rank(a, c, 0);
    if (!first) {
        return closed;
    }
    const int64_t estimated_steps = static_cast<int64_t>(first->steps.size()) * c.nranks;
    if (estimated_steps > lattice_count_step_limit) {
        // An exact per-edge form counts each round's largest message and one hop per round;
        // routed, every message crosses at least one physical link, so it is a lower bound.
        bool bound   = closed.exact && ports == port_model::per_edge;
        closed.exact = false;
        closed.note  = "topology-oblivious schedule on " + shape + ": routes not counted (about " +
                      std::to_string(estimated_steps) + " steps, over " +
                      std::to_string(lattice_count_step_limit) + "); " +
                      (bound ? "the closed form is a lower bound there (every logical hop "
                               "crosses at least one physical link); "
                             : "the closed form counts logical hops only; ") +
                      closed.note;
        return closed;
    }
    auto s = generate(a, c);
    if (!s) {
        return closed;
    }
    // Structure and statistics only: the values were proven by the verifier elsewhere.
    schedule::verify_options options;
    options.check_values = false;
    options.check_races  = false;
    options.route_links  = [&c](int src, int dst, std::vector<uint64_t>& links) {
        auto hops = routing::route(c.topo, src, dst, c.ties);
        for (size_t i = 1; i < hops.size(); ++i) {
            links.push_back((static_cast<uint64_t>(hops[i - 1]) << 32) |
                             static_cast<uint32_t>(hops[i]));
        }
    };
    auto report = schedule::verify(*s, options);
    if (!report.result || schedule::payload_bytes(s->info) <= 0) {
        return closed;
    }
    cost routed;
    routed.n_alpha = report.stats.hop_rounds;
    // The ratio to the call's own payload, so n_beta does not depend on how `bytes` was
    // rounded into the call's element count.
    routed.n_beta = report.stats.link_bytes / schedule::payload_bytes(s->info);
    routed.exact  = true;
    routed.note   = "topology-oblivious schedule routed on " + shape +
                  " (dimension-ordered, cut-through): α per physical hop of each round's " +
                  "longest route, the busiest physical link's bytes per round; on a switch: " +
                  std::string(a.formula);
    return routed;
}

}  // namespace loom::algorithms
