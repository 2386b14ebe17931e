// SPDX-License-Identifier: Apache-2.0
// A finished run as a sim::report: the observed n_alpha/n_beta, the critical path walked
// back from the step that finished last, the busiest links and each rank's idle time.
#include <algorithm>

#include "engine.hh"

namespace loom::sim::detail {

using schedule::step_kind;

// From the last step back: each step names what started it last (its gate), and the walk
// follows that — its own latest dependency, the peer's side of the rendezvous, the transfer
// that held a link, or the last push into an aggregation slot — until a step that was ready
// at time 0. Reached through a link, a transfer counts only what held it back before it
// took that link (blocker::prev): its own start, or an earlier wait on its path.
void engine::walk_critical_path(report& out) {
    int r      = last_rank_;
    uint32_t i = last_step_;
    // A step's last wait (via_link false), or the wait blocker::prev names (true).
    bool via_link = false;
    uint32_t wait = UINT32_MAX;
    // Each blocker record is used once and each step once for its own gate; this only
    // guards a bug.
    auto limit = static_cast<int64_t>(steps_ + blockers_.size() + 1);
    while (r >= 0 && limit-- > 0) {
        const rank_program& p = progs_[r];
        const op& o           = p.ops[i];
        chain_step c;
        c.rank     = r;
        c.step     = i;
        c.kind     = o.kind;
        c.peer     = schedule::is_transfer(o.kind) ? o.peer : -1;
        c.bytes    = p.count_of(i) * info_.dtype_size;
        gate g     = gate_of(o);
        uint32_t b = o.tag;
        if (via_link) {
            g = wait != UINT32_MAX ? gate::link : start_gate_of(o);
            b = wait;
        }
        via_link        = false;
        c.why           = o.pred == no_pred && g == gate::own ? gate::none : g;
        int next_r      = -1;
        uint32_t next_i = 0;
        switch (c.why) {
            case gate::none:
                break;
            case gate::own:
                next_r = r;
                next_i = o.pred;
                break;
            case gate::partner: {
                uint32_t ps = progs_[o.peer].ops[o.seq].pred;
                if (ps == no_pred) {
                    c.why = gate::none;
                } else {
                    next_r = o.peer;
                    next_i = ps;
                }
                break;
            }
            case gate::link: {
                const blocker& k = blockers_[b];
                c.link           = links_.name(k.link);
                next_r           = k.rank;
                next_i           = k.step;
                via_link         = true;
                wait             = k.prev;
                break;
            }
            case gate::slot: {
                const slot* s = slot_of(o.tag);
                next_r        = s->last_rank;
                next_i        = s->last_step;
                break;
            }
        }
        out.chain.push_back(std::move(c));
        r = next_r;
        i = next_i;
    }
    std::reverse(out.chain.begin(), out.chain.end());
}

report engine::make_report() {
    report out;
    out.time_s         = last_rank_ >= 0 ? last_.t : 0;
    out.n_alpha        = last_.hops;
    out.n_alpha_switch = last_.switch_hops;
    out.payload_bytes  = schedule::payload_bytes(info_);
    out.n_beta  = out.payload_bytes > 0 ? last_.beta_s * f_.bw_bytes_per_s / out.payload_bytes : 0;
    out.other_s = last_.other;
    out.steps   = steps_;
    out.transfers = transfers_;
    out.events    = events_;
    out.last_rank = last_rank_;
    out.last_step = last_step_;
    if (last_rank_ >= 0) {
        const op& o = progs_[last_rank_].ops[last_step_];
        path_.clear();
        if (schedule::is_transfer(o.kind)) {
            bool send = o.kind == step_kind::send;
            links_.path(send ? last_rank_ : o.peer, send ? o.peer : last_rank_, path_);
        } else if (schedule::is_inc(o.kind)) {
            links_.inc_path(last_rank_, o.kind == step_kind::inc_push, path_);
        }
        if (!path_.empty()) {
            out.last_link = links_.name(path_.back().link);
        }
        walk_critical_path(out);
    }
    // Links: the busiest by bytes (ties by id, so the order is stable).
    std::vector<uint32_t> used;
    const auto& all = links_.all();
    for (uint32_t id = 0; id < all.size(); ++id) {
        if (all[id].messages > 0) {
            used.push_back(id);
            out.link_bytes += all[id].bytes;
        }
    }
    out.links_used = static_cast<int64_t>(used.size());
    size_t top     = std::min(o_.top_links, used.size());
    std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top), used.end(),
                      [&](uint32_t a, uint32_t b) {
                          return all[a].bytes != all[b].bytes ? all[a].bytes > all[b].bytes : a < b;
                      });
    for (size_t k = 0; k < top; ++k) {
        const link_state& l = all[used[k]];
        out.top_links.push_back({links_.name(used[k]), l.bytes, l.messages, l.busy_s,
                                 out.time_s > 0 ? l.busy_s / out.time_s : 0});
    }
    out.idle_s.resize(ranks_.size());
    for (size_t r = 0; r < ranks_.size(); ++r) {
        out.idle_s[r] = std::max(0.0, out.time_s - ranks_[r].busy_s);
    }
    return out;
}

}  // namespace loom::sim::detail
