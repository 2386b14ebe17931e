// SPDX-License-Identifier: Apache-2.0
// The event loop (engine.hh): readiness, rendezvous, links served per head arrival,
// aggregation slots.
#include <algorithm>

#include "base/check.hh"
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
    status st = links_.init(f_, n);
    max_hops_ = links_.max_hops();
    return st;
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
    LOOM_CHECK(compile_rank(rs, info_.nranks, mem_, p, scratch_));
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
                slot* s = &slots_[e.i2];
                // Pushes arrive in time order, so the last one processed is the latest.
                s->last      = now_;
                s->last_rank = e.r1;
                s->last_step = e.i1;
                if (++s->pushed == s->expected) {
                    schedule(plus(now_, 0, 0, 0, f_.alu_latency_s), event_type::slot_ready, -1,
                             e.i2, -1, 0);
                }
                finish_op(e.r1, e.i1);
                break;
            }
            case event_type::pull_done:
            case event_type::local_done:
                busy_end(e.r1);
                finish_op(e.r1, e.i1);
                break;
            case event_type::hop_arrive:
                --hop_events_;
                next_hop(e.i1);
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

void engine::gate_link(int a, uint32_t si, int b, uint32_t ri, uint32_t gated) {
    op& s = progs_[a].ops[si];
    s.flags |= op_link;
    s.tag = gated;  // matched; an inc_pull's slot delivered, an inc_push's in its done event
    if (b >= 0) {
        op& d = progs_[b].ops[ri];
        d.flags |= op_link;
        d.tag = gated;
    }
}

bool engine::serve_hop(flight& f, const hop& h) {
    link_state& l = links_[h.link];
    if (l.free.t > f.head.t) {  // busy: wait for its current owner (the last one served)
        f.head = l.free;
        f.wait = static_cast<uint32_t>(blockers_.size());
        gate_link(f.a, f.si, f.b, f.ri, f.wait);
        blockers_.push_back({l.owner_rank, l.owner_step, h.link, l.owner_wait});
    }
    const double own = static_cast<double>(f.bytes) / l.rate;
    f.busy           = std::max(f.busy, own);
    l.free           = plus(f.head, 0, 0, f.busy, 0);
    l.owner_rank     = f.a;
    l.owner_step     = f.si;
    l.owner_wait     = f.wait;
    l.bytes += f.bytes;
    l.messages++;
    l.busy_s += own;
    f.head.t += h.alpha_units * l.alpha_s;
    f.head.hops += h.alpha_units * l.alpha_units;
    f.head.switch_hops += h.alpha_units * l.switch_units;
    if (++f.next < f.nhops) {
        return false;
    }
    schedule(plus(f.head, 0, 0, f.busy, 0), f.done, f.a, f.si, f.b, f.ri);
    return true;
}

bool engine::hop_due_now() const {
    return hop_events_ > 0 && heap_.front().at.t <= now_.t;
}

void engine::next_hop(uint32_t id) {
    flight& f       = flights_[id];
    const hop* hops = &flight_hops_[static_cast<size_t>(id) * max_hops_];
    // Hops its head reaches at this same time (a star's switch → rank) are served now too,
    // unless an earlier-scheduled arrival at this time is still to be served.
    while (!serve_hop(f, hops[f.next])) {
        if (f.head.t > now_.t || hop_due_now()) {
            ++hop_events_;
            schedule(f.head, event_type::hop_arrive, -1, id, -1, 0);
            return;
        }
    }
    f.next       = free_flight_;
    free_flight_ = id;
}

void engine::launch(int64_t bytes, int a, uint32_t si, int b, uint32_t ri, event_type done) {
    flight f;
    f.head  = now_;
    f.bytes = bytes;
    f.a     = a;
    f.si    = si;
    f.b     = b;
    f.ri    = ri;
    f.nhops = static_cast<uint32_t>(path_.size());
    f.done  = done;
    // The head reaches hop 1 now. Served at once (and the hops after it that it reaches at
    // this same time) unless a head that reached a link at this time is still to be served:
    // its arrival was scheduled first, and ties go in that order. Otherwise it needs a
    // record and an event; a one-hop path served at once needs neither.
    if (!hop_due_now()) {
        while (!serve_hop(f, path_[f.next])) {
            if (f.head.t > now_.t || hop_due_now()) {
                break;
            }
        }
        if (f.next == f.nhops) {
            return;
        }
    }
    if (path_.size() > max_hops_) {  // not expected (links_.max_hops()); re-lay the hops
        const size_t wide = path_.size();
        std::vector<hop> hops(flights_.size() * wide);
        for (size_t k = 0; k < flights_.size(); ++k) {
            std::copy_n(flight_hops_.begin() + static_cast<std::ptrdiff_t>(k * max_hops_),
                        max_hops_, hops.begin() + static_cast<std::ptrdiff_t>(k * wide));
        }
        flight_hops_.swap(hops);
        max_hops_ = static_cast<uint32_t>(wide);
    }
    uint32_t id = free_flight_;
    if (id != UINT32_MAX) {
        free_flight_ = flights_[id].next;
    } else {
        id = static_cast<uint32_t>(flights_.size());
        flights_.emplace_back();
        flight_hops_.resize(flights_.size() * max_hops_);
    }
    flights_[id] = f;
    std::copy(path_.begin(), path_.end(),
              flight_hops_.begin() + static_cast<std::ptrdiff_t>(id) * max_hops_);
    ++hop_events_;
    schedule(f.head, event_type::hop_arrive, -1, id, -1, 0);
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
    // What started it; a link its head waits for overrides this (gate_link).
    set_gate(s, send_was_later ? gate::own : gate::partner);
    set_gate(d, send_was_later ? gate::partner : gate::own);
    busy_begin(a);
    busy_begin(b);
    ++transfers_;
    links_.path(a, b, path_);
    launch(count * info_.dtype_size, a, si, b, ri, event_type::transfer_done);
}

void engine::start_inc(int r, uint32_t i, bool push, gate why) {
    op& o = progs_[r].ops[i];
    o.flags |= op_started;
    set_gate(o, why);
    busy_begin(r);
    ++transfers_;
    // A push's done event carries its slot: a link that gates it overwrites o.tag.
    uint32_t slot_id = push ? *slot_index_.find(o.tag) : 0;
    links_.inc_path(r, push, path_);
    launch(progs_[r].count_of(i) * info_.dtype_size, r, i, -1, slot_id,
           push ? event_type::push_done : event_type::pull_done);
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
