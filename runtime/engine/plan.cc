// SPDX-License-Identifier: Apache-2.0
// engine::compile: schedule -> plan.
#include <algorithm>
#include <map>

#include "base/wire_tag.hh"
#include "engine/in_place.hh"
#include "engine/plan.hh"

namespace loom::engine {
namespace {

buffer to_buffer(schedule::buffer_id b) {
    switch (b) {
        case schedule::buffer_id::input:
            return buffer::input;
        case schedule::buffer_id::output:
            return buffer::output;
        case schedule::buffer_id::scratch:
            return buffer::scratch;
        case schedule::buffer_id::none:
            break;
    }
    return buffer::none;
}

// Which output bytes hold a reduction on this rank (for LOOM_AVG's final division).
int64_t reduced_output(const schedule::schedule_info& info, int rank, size_t elem) {
    switch (info.coll) {
        case schedule::collective::allreduce:
        case schedule::collective::reduce_scatter:
            return schedule::output_count(info, rank) * static_cast<int64_t>(elem);
        case schedule::collective::reduce:
            return rank == info.root ? info.count * static_cast<int64_t>(elem) : 0;
        default:
            return 0;
    }
}

// In all-reduce, all-gather, reduce-scatter and all-to-all every rank's output depends on
// every rank's messages, so a rank that completes has heard (transitively, with matching
// signatures) from every rank: no acknowledgement is needed, and none costs latency there.
bool needs_acks(schedule::collective c) {
    return c == schedule::collective::broadcast || c == schedule::collective::reduce ||
           c == schedule::collective::sendrecv;
}

void one_way_peers(const schedule::rank_schedule& rs, std::vector<int32_t>* only_sent,
                   std::vector<int32_t>* only_received) {
    std::vector<int32_t> sent, received;
    for (const schedule::step& s : rs.steps) {
        if (s.kind == schedule::step_kind::send) {
            sent.push_back(s.peer);
        } else if (schedule::is_transfer(s.kind)) {
            received.push_back(s.peer);
        }
    }
    auto has = [](const std::vector<int32_t>& v, int32_t x) {
        return std::find(v.begin(), v.end(), x) != v.end();
    };
    for (int32_t p : sent) {
        if (!has(received, p) && !has(*only_sent, p)) {
            only_sent->push_back(p);
        }
    }
    for (int32_t p : received) {
        if (!has(sent, p) && !has(*only_received, p)) {
            only_received->push_back(p);
        }
    }
}

}  // namespace

result<std::shared_ptr<const plan>> compile(const schedule::schedule_info& info,
                                            const schedule::rank_schedule& rs, loom_dtype_t dtype,
                                            uint64_t signature, bool acks_when_steps_done) {
    auto p      = std::make_shared<plan>();
    size_t elem = loom_dtype_size(dtype);
    if (elem == 0) {
        return invalid_argument("unknown dtype " + std::to_string(static_cast<int>(dtype)));
    }
    auto e                  = static_cast<int64_t>(elem);
    p->info                 = info;
    p->dtype                = dtype;
    p->element_bytes        = elem;
    p->signature            = signature;
    p->rank                 = rs.rank;
    p->input_bytes          = schedule::input_count(info, rs.rank) * e;
    p->output_bytes         = schedule::output_count(info, rs.rank) * e;
    p->scratch_bytes        = rs.scratch_count * e;
    p->reduced_output_bytes = reduced_output(info, rs.rank, elem);
    p->acks_when_steps_done = acks_when_steps_done;
    p->steps.resize(rs.steps.size());
    // k per (peer, tag, direction): the k-th message of that pair and tag (step.hh's rule).
    std::map<std::tuple<int, uint32_t, bool>, uint32_t> counters;
    std::vector<uint32_t> fan_out(rs.steps.size() + 1, 0);
    for (size_t i = 0; i < rs.steps.size(); ++i) {
        const schedule::step& s = rs.steps[i];
        plan_step& ps           = p->steps[i];
        ps.kind                 = s.kind;
        ps.dst_buf = to_buffer(s.dst.buf), ps.src_buf = to_buffer(s.src.buf);
        ps.aux_buf = to_buffer(s.aux.buf);
        ps.peer    = s.peer;
        ps.dst = s.dst.offset * e, ps.src = s.src.offset * e, ps.aux = s.aux.offset * e;
        bool reads = s.kind == schedule::step_kind::send || s.kind == schedule::step_kind::inc_push;
        ps.count   = reads ? s.src.count : s.dst.count;
        if (s.kind == schedule::step_kind::local_copy ||
            s.kind == schedule::step_kind::local_reduce) {
            ps.count = s.dst.count;
        }
        ps.bytes   = ps.count * e;
        ps.ndeps   = s.ndeps;
        ps.staging = -1;
        ps.message = 0;
        if (schedule::is_inc(s.kind)) {
            ps.message = s.tag;  // the aggregation slot (segment) it goes through
        }
        if (schedule::is_transfer(s.kind)) {
            bool sending = s.kind == schedule::step_kind::send;
            uint32_t k   = counters[{s.peer, s.tag, sending}]++;
            if (!wire::message_bits(s.tag, k, &ps.message)) {
                return invalid_argument("rank " + std::to_string(rs.rank) + " step " +
                                        std::to_string(i) + ": tag " + std::to_string(s.tag) +
                                        " or message #" + std::to_string(k) +
                                        " does not fit the wire tag");
            }
        }
        if (s.kind == schedule::step_kind::recv_reduce) {
            ps.staging = p->staging_bytes;
            p->staging_bytes += ps.bytes;
        }
        for (int d = 0; d < s.ndeps; ++d) {
            ++fan_out[rs.deps_of(s)[d] + 1];
        }
        if (s.ndeps == 0) {
            p->roots.push_back(static_cast<uint32_t>(i));
        }
    }
    for (size_t i = 0; i < rs.steps.size(); ++i) {
        fan_out[i + 1] += fan_out[i];
    }
    if (needs_acks(info.coll)) {
        one_way_peers(rs, &p->ack_from, &p->ack_to);
    }
    p->dependents.resize(fan_out.back());
    std::vector<uint32_t> fill(fan_out.begin(), fan_out.end() - 1);
    for (size_t i = 0; i < rs.steps.size(); ++i) {
        const schedule::step& s = rs.steps[i];
        for (int d = 0; d < s.ndeps; ++d) {
            p->dependents[fill[rs.deps_of(s)[d]]++] = static_cast<uint32_t>(i);
        }
        p->steps[i].dependents_begin = fan_out[i];
        p->steps[i].dependents_end   = fan_out[i + 1];
    }
    analyse_in_place(rs, *p);
    return std::shared_ptr<const plan>(std::move(p));
}

bool one_way_roles_cycle(const schedule::schedule& s) {
    if (!needs_acks(s.info.coll)) {
        return false;
    }
    // waits_for[r]: the peers rank r only sends to (plan::ack_from).
    const size_t n = s.ranks.size();
    std::vector<std::vector<int32_t>> waits_for(n);
    for (size_t r = 0; r < n; ++r) {
        std::vector<int32_t> only_received;
        one_way_peers(s.ranks[r], &waits_for[r], &only_received);
    }
    // Depth-first search for a back edge: 0 unseen, 1 on the path, 2 done.
    std::vector<uint8_t> mark(n, 0);
    std::vector<std::pair<size_t, size_t>> path;  // (rank, next edge to follow)
    for (size_t start = 0; start < n; ++start) {
        if (mark[start] != 0) {
            continue;
        }
        path.push_back({start, 0});
        mark[start] = 1;
        while (!path.empty()) {
            auto& [at, edge] = path.back();
            if (edge == waits_for[at].size()) {
                mark[at] = 2;
                path.pop_back();
                continue;
            }
            auto next = static_cast<size_t>(waits_for[at][edge++]);
            if (next >= n || mark[next] == 2) {
                continue;
            }
            if (mark[next] == 1) {
                return true;
            }
            mark[next] = 1;
            path.push_back({next, 0});
        }
    }
    return false;
}

}  // namespace loom::engine
