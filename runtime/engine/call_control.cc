// SPDX-License-Identifier: Apache-2.0
// The control messages that make a call's outcome the same on every rank without an
// agreement round: hellos and completion acknowledgements for the one-way roles
// (plan::ack_from / ack_to), and the probe that names the rank which never arrived when a
// call times out. Control messages are never dropped: one a full queue refuses is sent again
// on the next pass (and flushed, briefly, when the engine is destroyed).
#include <algorithm>

#include "base/clock.hh"
#include "base/log.hh"
#include "engine/engine_impl.hh"

namespace loom::engine {
namespace {

// How long a timed-out call waits for the answers to its probe before naming a rank.
constexpr double probe_grace_s    = 0.5;
constexpr size_t max_early_hellos = 256;

uint64_t control_tag(uint64_t call_tag, wire::control_kind k) {
    return drivers::control_tag_bit | call_tag | static_cast<uint32_t>(k);
}

bool contains(const std::vector<int32_t>& v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

// Before a call starts: what peers already said (a failure notice, a hello) must be seen,
// so a late rank fails at once instead of completing against a peer that gave up.
void engine_impl::absorb_arrivals() {
    for (int pass = 0; pass < 8; ++pass) {
        if (poll_source_once(sources_.front()) < poll_burst) {
            break;
        }
    }
}

void engine_impl::send_control(int peer, uint64_t tag, uint64_t imm) {
    if (controls_.empty() && fast_.post_send(fast_.ctx, peer, tag, imm, nullptr, 0,
                                             drivers::control_cookie) != LOOM_ERR_NO_RESOURCE) {
        return;
    }
    controls_.push_back(control{peer, tag, imm});
}

void engine_impl::send_control_to_others(uint64_t tag, uint64_t imm) {
    for (int peer = 0; peer < config_.size; ++peer) {
        if (peer != config_.rank) {
            send_control(peer, tag, imm);
        }
    }
}

bool engine_impl::flush_controls() {
    size_t sent = 0;
    for (; sent < controls_.size(); ++sent) {
        const control& c = controls_[sent];
        if (fast_.post_send(fast_.ctx, c.peer, c.tag, c.imm, nullptr, 0, drivers::control_cookie) ==
            LOOM_ERR_NO_RESOURCE) {
            break;
        }
    }
    controls_.erase(controls_.begin(), controls_.begin() + static_cast<long>(sent));
    return sent > 0;
}

// At start: the acknowledgements to wait for, hellos to the peers this rank only sends to,
// and the hellos that came before the call started here.
void engine_impl::begin_acks(request& r) {
    const plan& p  = *r.p;
    r.acks_missing = static_cast<uint32_t>(p.ack_from.size());
    r.acked.assign(p.ack_from.size(), 0);
    r.probing = false;
    r.answers.clear();
    for (int32_t peer : p.ack_from) {
        send_control(peer, control_tag(r.call_tag, wire::control_kind::hello), p.signature);
    }
    const uint32_t seq = wire::seq_of(r.call_tag);
    for (size_t k = 0; k < early_hellos_.size();) {
        const hello& h = early_hellos_[k];
        if (h.seq != seq || h.p2p != r.p2p || (r.p2p && !contains(p.ack_to, h.from))) {
            ++k;
            continue;
        }
        hello seen = h;
        early_hellos_.erase(early_hellos_.begin() + static_cast<long>(k));
        if (seen.signature != p.signature && r.in_progress()) {
            fail(r, LOOM_ERR_MISMATCH, seen.from, -1, other_call(seen.from, "started"), true);
        }
    }
}

// A rank acknowledges when it completes, so a mismatch anywhere downstream also fails the
// ranks upstream; in a schedule whose one-way roles form a cycle that would deadlock, so
// there it acknowledges as soon as its own steps are done (engine.hh one_way_roles_cycle).
void engine_impl::steps_done(request& r) {
    if (r.p->acks_when_steps_done) {
        send_acks(r);
    }
    if (r.acks_missing == 0) {
        finish(r);
    }
}

void engine_impl::send_acks(const request& r) {
    for (int32_t peer : r.p->ack_to) {
        send_control(peer, control_tag(r.call_tag, wire::control_kind::ack), r.p->signature);
    }
}

// The in-progress call a control message of (seq, p2p) from `from` is about. Point-to-point
// calls share sequence numbers across pairs, so for them the sender must be a peer the call
// waits for (ack) or hears from (hello).
request* engine_impl::find_call(uint32_t seq, bool p2p, int from, bool from_ack_to) {
    for (auto& slot : pool_) {
        request& r = *slot;
        if (!r.active || !r.in_progress() || wire::seq_of(r.call_tag) != seq || r.p2p != p2p) {
            continue;
        }
        if (p2p && !contains(from_ack_to ? r.p->ack_to : r.p->ack_from, from)) {
            continue;
        }
        return &r;
    }
    return nullptr;
}

void engine_impl::on_hello(const drivers::completion& c) {
    const uint32_t seq = wire::seq_of(c.tag);
    const bool p2p     = wire::is_p2p(c.tag);
    if (request* r = find_call(seq, p2p, c.peer, true); r != nullptr) {
        if (c.imm != r->p->signature) {
            fail(*r, LOOM_ERR_MISMATCH, c.peer, -1, other_call(c.peer, "started"), true);
        }
        return;
    }
    if (!p2p && started_already(seq)) {
        return;  // a call that already ended here: its outcome is settled
    }
    if (early_hellos_.size() == max_early_hellos) {
        early_hellos_.erase(early_hellos_.begin());
    }
    early_hellos_.push_back(hello{seq, p2p, c.peer, c.imm});
}

void engine_impl::on_ack(const drivers::completion& c) {
    request* r = find_call(wire::seq_of(c.tag), wire::is_p2p(c.tag), c.peer, false);
    if (r == nullptr) {
        return;  // the call already failed here
    }
    if (c.imm != r->p->signature) {
        fail(*r, LOOM_ERR_MISMATCH, c.peer, -1, other_call(c.peer, "completed"), true);
        return;
    }
    const auto& from = r->p->ack_from;
    for (size_t k = 0; k < from.size(); ++k) {
        if (from[k] == c.peer && !r->acked[k]) {
            r->acked[k] = 1;
            if (--r->acks_missing == 0 && r->done_steps == r->p->steps.size()) {
                finish(*r);
            }
        }
    }
}

bool engine_impl::started_already(uint32_t seq_field) const {
    if (!started_any_) {
        return false;
    }
    // Sequence fields count modulo 2^20 - 1: within half the range ahead is the future.
    constexpr uint32_t range = (1u << wire::seq_bits) - 1;
    uint32_t ahead           = (seq_field + range - last_started_seq_) % range;
    return ahead == 0 || ahead > range / 2;
}

void engine_impl::on_query(const drivers::completion& c) {
    const uint32_t seq = wire::seq_of(c.tag);
    auto where         = wire::call_position::behind;
    bool found         = false;
    for (auto& slot : pool_) {
        const request& r = *slot;
        if (r.active && !r.p2p && wire::seq_of(r.call_tag) == seq) {
            where =
                r.in_progress() ? wire::call_position::in_progress : wire::call_position::behind;
            found = true;
            break;
        }
    }
    if (!found && !started_already(seq)) {
        where = wire::call_position::not_started;
    }
    send_control(c.peer, control_tag(c.tag & drivers::call_tag_mask, wire::control_kind::answer),
                 static_cast<uint64_t>(where));
}

void engine_impl::on_answer(const drivers::completion& c) {
    const uint32_t seq = wire::seq_of(c.tag);
    for (auto& slot : pool_) {
        request& r = *slot;
        if (!r.active || !r.in_progress() || !r.probing || r.p2p ||
            wire::seq_of(r.call_tag) != seq || c.peer < 0 ||
            c.peer >= static_cast<int>(r.answers.size())) {
            continue;
        }
        r.answers[static_cast<size_t>(c.peer)] = static_cast<int8_t>(c.imm & 3);
        for (size_t k = 0; k < r.answers.size(); ++k) {
            if (static_cast<int>(k) != config_.rank && r.answers[k] < 0) {
                return;  // more to come
            }
        }
        conclude_probe(r);
        return;
    }
}

// A collective past its deadline asks every rank where it is; the answers (or their absence)
// name the rank that never arrived, rather than the neighbour this rank happened to wait on.
void engine_impl::start_probe(request& r) {
    r.probing       = true;
    r.probe_until_s = now_s() + probe_grace_s;
    r.deadline_s    = r.probe_until_s;
    r.answers.assign(static_cast<size_t>(config_.size), -1);
    send_control_to_others(control_tag(r.call_tag, wire::control_kind::query), 0);
}

void engine_impl::conclude_probe(request& r) {
    int absent = -1, silent = -1;
    for (size_t k = 0; k < r.answers.size(); ++k) {
        if (static_cast<int>(k) == config_.rank) {
            continue;
        }
        if (absent < 0 && r.answers[k] == static_cast<int8_t>(wire::call_position::not_started)) {
            absent = static_cast<int>(k);
        }
        if (silent < 0 && r.answers[k] < 0) {
            silent = static_cast<int>(k);
        }
    }
    r.probing = false;
    if (absent >= 0) {
        time_out(r, absent, "rank " + std::to_string(absent) + " has not started this call");
    } else if (silent >= 0) {
        time_out(r, silent,
                 "rank " + std::to_string(silent) +
                     " did not answer (it is not making progress in this communicator)");
    } else {
        time_out(r, -1, "");
    }
}

}  // namespace loom::engine
