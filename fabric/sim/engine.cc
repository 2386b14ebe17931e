// The event loop (engine.hh): readiness, rendezvous, link reservations, aggregation slots.
#include <algorithm>

#include "engine.hh"

namespace loom::sim::detail {

using schedule::step_kind;

namespace {

// The heap's order: earliest time first, then first scheduled (a type, so it inlines).
struct later {
    bool operator()(const event& a, const event& b) const {
        return a.at.t != b.at.t ? a.at.t > b.at.t : a.order > b.order;
    }
};

stamp plus(stamp s, double hops, double alpha_s, double beta_s, double other_s) {
    s.t += hops * alpha_s + beta_s + other_s;
    s.hops += hops;
    s.beta_s += beta_s;
    s.other += other_s;
    return s;
}

}  // namespace

engine::engine(const fabric& f, const schedule::schedule_info& info, const options& o)
    : f_(f), info_(info), o_(o) {}

status engine::init() {
    const int n = info_.nranks;
    progs_.assign(n, {});
    added_.assign(n, 0);
    ranks_.assign(n, {});
    return links_.init(f_, n);
}

slot* engine::slot_of(uint32_t tag) {
    uint32_t* i = slot_index_.find(tag);
    return i == nullptr ? nullptr : &slots_[*i];
}

status engine::add_rank(const schedule::rank_schedule& rs) {
    if (rs.rank < 0 || rs.rank >= info_.nranks || added_[rs.rank]) {
        return invalid_argument("rank entry " + std::to_string(rs.rank) + " is malformed");
    }
    added_[rs.rank] = 1;
    rank_program& p = progs_[rs.rank];
    if (status st = compile_rank(rs, info_.nranks, mem_, p, scratch_); !st) {
        return st;
    }
    steps_ += p.size;
    for (uint32_t i = 0; i < p.size; ++i) {
        const op& o = p.ops[i];
        if (!schedule::is_inc(o.kind)) {
            continue;
        }
        if (slot_of(o.tag) == nullptr) {
            slot_index_.insert(o.tag, static_cast<uint32_t>(slots_.size()));
            slots_.emplace_back();
        }
        if (o.kind == step_kind::inc_push) {
            slot_of(o.tag)->expected++;
        }
    }
    return status::ok();
}

void engine::schedule(const stamp& at, event_type type, int r1, uint32_t i1, int r2, uint32_t i2) {
    heap_.push_back({at, order_++, r1, i1, r2, i2, type});
    std::push_heap(heap_.begin(), heap_.end(), later{});
}

void engine::busy_begin(int r) {
    rank_state& s = ranks_[r];
    if (s.active++ == 0) {
        s.since = now_.t;
    }
}

void engine::busy_end(int r) {
    rank_state& s = ranks_[r];
    if (--s.active == 0) {
        s.busy_s += now_.t - s.since;
    }
}

status engine::run() {
    for (int r = 0; r < info_.nranks; ++r) {
        if (!added_[r]) {
            return invalid_argument("rank " + std::to_string(r) + " has no steps list");
        }
        const rank_program& p = progs_[r];
        for (uint32_t i = 0; i < p.size; ++i) {
            if (p.ops[i].waiting == 0) {
                work_.push_back({r, i, no_pred});
            }
        }
    }
    now_ = {};
    drain();
    while (!heap_.empty() && state_.is_ok()) {
        std::pop_heap(heap_.begin(), heap_.end(), later{});
        event e = heap_.back();
        heap_.pop_back();
        now_ = e.at;
        ++events_;
        switch (e.type) {
            case event_type::transfer_done:
                busy_end(e.r1);
                busy_end(e.r2);
                finish_op(e.r1, e.i1);
                finish_op(e.r2, e.i2);
                break;
            case event_type::push_done: {
                busy_end(e.r1);
                slot* s = slot_of(progs_[e.r1].ops[e.i1].tag);
                // Pushes arrive in time order, so the last one processed is the latest.
                s->last      = now_;
                s->last_rank = e.r1;
                s->last_step = e.i1;
                if (++s->pushed == s->expected) {
                    schedule(plus(now_, 0, 0, 0, f_.alu_latency_s), event_type::slot_ready, -1,
                             *slot_index_.find(progs_[e.r1].ops[e.i1].tag), -1, 0);
                }
                finish_op(e.r1, e.i1);
                break;
            }
            case event_type::pull_done:
            case event_type::local_done:
                busy_end(e.r1);
                finish_op(e.r1, e.i1);
                break;
            case event_type::slot_ready: {
                slot& s = slots_[e.i1];
                s.ready = true;
                for (const pending_transfer& p : s.pulls) {
                    start_inc(p.rank, p.step, false, gate::slot);
                }
                s.pulls.clear();
                break;
            }
        }
        drain();
    }
    if (!state_.is_ok()) {
        return state_;
    }
    return check_finished();
}

// First in, first out: steps that become ready together are posted in rank and list order,
// so the earlier of two sends on one link takes it first.
void engine::drain() {
    for (size_t k = 0; k < work_.size() && state_.is_ok(); ++k) {
        ready_item x = work_[k];
        on_ready(x.rank, x.step, x.pred);
    }
    work_.clear();
}

void engine::finish_op(int r, uint32_t i) {
    rank_program& p = progs_[r];
    p.ops[i].flags |= op_done;
    ranks_[r].done++;
    if (last_rank_ < 0 || now_.t > last_.t) {
        last_      = now_;
        last_rank_ = r;
        last_step_ = i;
    }
    p.for_each_dependent(i, [&](uint32_t d) {
        if (--p.ops[d].waiting == 0) {
            work_.push_back({r, d, i});
        }
    });
}

void engine::on_ready(int r, uint32_t i, uint32_t pred) {
    rank_program& p = progs_[r];
    op& o           = p.ops[i];
    o.pred          = pred;
    switch (o.kind) {
        case step_kind::send:
        case step_kind::recv:
        case step_kind::recv_reduce:
        case step_kind::recv_copy:
            rendezvous(r, i);
            return;
        case step_kind::inc_push:
            start_inc(r, i, true, gate::own);
            return;
        case step_kind::inc_pull: {
            slot* s = slot_of(o.tag);
            if (s->ready) {
                start_inc(r, i, false, gate::own);
            } else {
                s->pulls.push_back({r, i});  // grows per slot, not per event in general
            }
            return;
        }
        case step_kind::local_reduce:
        case step_kind::local_copy:
            set_gate(o, gate::own);
            if (f_.gamma_s_per_byte > 0) {
                double bytes = static_cast<double>(p.count_of(i)) * info_.dtype_size;
                busy_begin(r);
                schedule(plus(now_, 0, 0, 0, bytes * f_.gamma_s_per_byte), event_type::local_done,
                         r, i, -1, 0);
            } else {
                finish_op(r, i);
            }
            return;
    }
}

void engine::rendezvous(int r, uint32_t i) {
    const op& o  = progs_[r].ops[i];
    bool is_send = o.kind == step_kind::send;
    uint64_t src = static_cast<uint32_t>(is_send ? r : o.peer);
    uint64_t dst = static_cast<uint32_t>(is_send ? o.peer : r);
    key128 key{(src << 32) | dst, (static_cast<uint64_t>(o.tag) << 32) | o.seq};
    pending_transfer* other = pending_.find(key);
    if (other == nullptr) {
        pending_.insert(key, {r, i});
        return;
    }
    pending_transfer partner = *other;
    pending_.erase(key);
    // This side became ready now, the other one earlier (or at the same time).
    if (is_send) {
        start_transfer(r, i, partner.rank, partner.step, true);
    } else {
        start_transfer(partner.rank, partner.step, r, i, false);
    }
}

stamp engine::reserve(int64_t bytes, int owner_rank, uint32_t owner_step, uint32_t* gated) {
    const auto b = static_cast<double>(bytes);
    double busy  = 0;  // B over the slowest link crossed so far (uniform: every link's)
    stamp head   = now_;
    *gated       = UINT32_MAX;
    for (const hop& h : path_) {
        link_state& l = links_[h.link];
        if (l.free.t > head.t) {
            head   = l.free;
            *gated = static_cast<uint32_t>(blockers_.size());
            blockers_.push_back({l.owner_rank, l.owner_step, h.link});
        }
        const double own = b / l.rate;
        busy             = std::max(busy, own);
        l.free           = plus(head, 0, 0, busy, 0);
        l.owner_rank     = owner_rank;
        l.owner_step     = owner_step;
        l.bytes += bytes;
        l.messages++;
        l.busy_s += own;
        head.t += h.alpha_units * l.alpha_s;
        head.hops += h.alpha_units * l.alpha_units;
    }
    return plus(head, 0, 0, busy, 0);
}

void engine::start_transfer(int a, uint32_t si, int b, uint32_t ri, bool send_was_later) {
    op& s         = progs_[a].ops[si];
    op& d         = progs_[b].ops[ri];
    int64_t count = progs_[a].count_of(si);
    if (count != progs_[b].count_of(ri)) {
        state_ =
            invalid_argument(describe_op(progs_[a], a, si) + " sends " + std::to_string(count) +
                             " elements but the matching " + describe_op(progs_[b], b, ri) +
                             " expects " + std::to_string(progs_[b].count_of(ri)));
        return;
    }
    s.seq = ri;  // from here on: the partner's step
    d.seq = si;
    s.flags |= op_started;
    d.flags |= op_started;
    links_.path(a, b, path_);
    uint32_t gated = UINT32_MAX;
    stamp done     = reserve(count * info_.dtype_size, a, si, &gated);
    if (gated != UINT32_MAX) {
        set_gate(s, gate::link);
        set_gate(d, gate::link);
        s.tag = d.tag = gated;
    } else {
        set_gate(s, send_was_later ? gate::own : gate::partner);
        set_gate(d, send_was_later ? gate::partner : gate::own);
    }
    busy_begin(a);
    busy_begin(b);
    ++transfers_;
    schedule(done, event_type::transfer_done, a, si, b, ri);
}

void engine::start_inc(int r, uint32_t i, bool push, gate why) {
    op& o = progs_[r].ops[i];
    o.flags |= op_started;
    links_.inc_path(r, push, path_);
    uint32_t gated = UINT32_MAX;
    stamp done     = reserve(progs_[r].count_of(i) * info_.dtype_size, r, i, &gated);
    if (gated != UINT32_MAX) {
        set_gate(o, gate::link);
        o.tag = gated;  // a pull's slot is no longer needed: the chain goes through the link
    } else {
        set_gate(o, why);
    }
    busy_begin(r);
    ++transfers_;
    schedule(done, push ? event_type::push_done : event_type::pull_done, r, i, -1, 0);
}

status engine::check_finished() {
    for (int r = 0; r < info_.nranks; ++r) {
        const rank_program& p = progs_[r];
        if (ranks_[r].done == p.size) {
            continue;
        }
        for (uint32_t i = 0; i < p.size; ++i) {
            const op& o = p.ops[i];
            if (o.flags & op_done) {
                continue;
            }
            std::string what = describe_op(p, r, i);
            if (o.waiting > 0) {
                continue;  // report the step it waits for instead
            }
            if (schedule::is_transfer(o.kind)) {
                return verify_error("deadlock: " + what + " never meets its matching " +
                                    (o.kind == step_kind::send ? "receive" : "send") + " (tag " +
                                    std::to_string(o.tag) + ", #" + std::to_string(o.seq + 1) +
                                    ")");
            }
            if (o.kind == step_kind::inc_pull) {
                return verify_error("deadlock: " + what + " waits for slot " +
                                    std::to_string(o.tag) +
                                    ", whose contributions never all arrive");
            }
            return internal_error("simulator: " + what + " was ready but never finished");
        }
    }
    return status::ok();
}

}  // namespace loom::sim::detail
