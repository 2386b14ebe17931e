// SPDX-License-Identifier: Apache-2.0
// Executing steps against the driver's fast path, finishing them when their completions
// arrive, and failing calls with a diagnostic that names rank, peer, call and step.
#include <algorithm>
#include <cstring>

#include "base/clock.hh"
#include "base/log.hh"
#include "engine/engine_impl.hh"

namespace loom::engine {
namespace {

uint64_t cookie_of(const request& r, uint32_t step) {
    return (uint64_t{r.generation} << 48) | (uint64_t{r.slot} << 32) | step;
}

constexpr size_t max_early_notices = 64;

// How long a call whose incoming message was withdrawn waits for the sender's notice.
constexpr double withdrawn_grace_s = 0.5;

// A failure notice's immediate: status (16 bits), the reporting rank (24), and the rank the
// failure concerns plus one (24; 0 when none), so every rank can name the culprit.
uint64_t notice_imm(loom_status_t code, int reporter, int culprit) {
    return (uint64_t(static_cast<uint16_t>(code))) | (uint64_t(reporter & 0xffffff) << 16) |
           (uint64_t((culprit + 1) & 0xffffff) << 40);
}

}  // namespace

engine_impl::notice engine_impl::notice_of(const drivers::completion& c) {
    notice n;
    n.seq     = wire::seq_of(c.tag);
    n.p2p     = wire::is_p2p(c.tag);
    n.code    = static_cast<loom_status_t>(c.imm & 0xffff);
    n.from    = static_cast<int>((c.imm >> 16) & 0xffffff);
    n.culprit = static_cast<int>((c.imm >> 40) & 0xffffff) - 1;
    return n;
}

std::string engine_impl::reported(const notice& n) {
    std::string out = "rank " + std::to_string(n.from) + " reported " + loom_status_string(n.code);
    if (n.culprit >= 0 && n.culprit != n.from) {
        out += " involving rank " + std::to_string(n.culprit);
    }
    return out;
}

bool engine_impl::drain(request& r) {
    bool busy = false;
    // Retry what the driver refused for lack of room first: it was ready earlier.
    if (!r.blocked.empty()) {
        std::vector<uint32_t> retry;
        retry.swap(r.blocked);
        for (uint32_t i : retry) {
            busy |= execute(r, i);
            if (!r.in_progress()) {
                return true;
            }
        }
        // Keep the vector's capacity for the next call.
        if (r.blocked.empty()) {
            retry.clear();
            r.blocked.swap(retry);
        }
    }
    while (!r.ready.empty() && r.in_progress()) {
        uint32_t i = r.ready.back();
        r.ready.pop_back();
        busy |= execute(r, i);
    }
    return busy;
}

bool engine_impl::execute(request& r, uint32_t i) {
    const plan_step& s = r.p->steps[i];
    const uint64_t tag = r.call_tag | s.message;
    const uint64_t sig = r.p->signature;
    loom_status_t st   = LOOM_SUCCESS;
    switch (s.kind) {
        case schedule::step_kind::send:
            st = fast_.post_send(fast_.ctx, s.peer, tag, sig, r.at(s.src_buf, s.src), s.bytes,
                                 cookie_of(r, i));
            break;
        case schedule::step_kind::recv:
        case schedule::step_kind::recv_copy:
            st = fast_.post_recv(fast_.ctx, s.peer, tag, sig, r.at(s.dst_buf, s.dst), s.bytes,
                                 cookie_of(r, i));
            break;
        case schedule::step_kind::recv_reduce:
            st = fast_.post_recv(fast_.ctx, s.peer, tag, sig, r.at(buffer::staging, s.staging),
                                 s.bytes, cookie_of(r, i));
            break;
        case schedule::step_kind::local_copy:
            if (s.bytes > 0) {  // empty regions may have null buffers
                std::byte* to         = r.at(s.dst_buf, s.dst);
                const std::byte* from = r.at(s.src_buf, s.src);
                if (to != from) {  // in place, a copy onto itself is skipped
                    std::memmove(to, from, s.bytes);
                }
            }
            complete(r, i);
            return true;
        case schedule::step_kind::local_reduce:
            r.kernel(r.at(s.dst_buf, s.dst), r.at(s.src_buf, s.src), r.at(s.aux_buf, s.aux),
                     s.count);
            complete(r, i);
            return true;
        case schedule::step_kind::inc_push:
        case schedule::step_kind::inc_pull:
            st = post_in_network(r, i);
            if (st == LOOM_ERR_NOT_SUPPORTED) {
                fail(r, st, -1, static_cast<int>(i),
                     "in-network step without an aggregation node on this communicator", true);
                return true;
            }
            break;
    }
    if (st == LOOM_ERR_NO_RESOURCE) {
        r.blocked.push_back(i);
        return false;
    }
    if (st != LOOM_SUCCESS) {
        fail(r, st, s.peer, static_cast<int>(i),
             schedule::is_inc(s.kind) ? offload_of(*r.p)->last_failure()
                                      : std::string("the driver refused the step"),
             true);
        return true;
    }
    r.state[i] = step_state::posted;
    return true;
}

loom_status_t engine_impl::post_in_network(request& r, uint32_t i) {
    offload* o = offload_of(*r.p);
    if (o == nullptr) {
        return LOOM_ERR_NOT_SUPPORTED;
    }
    const plan_step& s = r.p->steps[i];
    const bool push    = s.kind == schedule::step_kind::inc_push;
    offload_op op;
    op.cookie     = cookie_of(r, i);
    op.seq        = r.seq;
    op.slot       = s.message;
    op.push       = push;
    op.data       = push ? const_cast<std::byte*>(r.at(s.src_buf, s.src)) : r.at(s.dst_buf, s.dst);
    op.first      = static_cast<uint64_t>((push ? s.src : s.dst) / int64_t(r.p->element_bytes));
    op.count      = static_cast<uint64_t>(s.count);
    op.dtype      = r.p->dtype;
    op.op         = r.buffers.op == LOOM_AVG ? LOOM_SUM : r.buffers.op;
    op.coll       = r.p->info.coll;
    op.root       = r.p->info.root;
    op.deadline_s = r.deadline_s;
    op.signature  = r.p->signature;
    return o->post(op);
}

void engine_impl::on_completion(const drivers::completion& c) {
    if (c.cookie == drivers::control_cookie) {
        on_control(c);
        return;
    }
    auto slot = static_cast<uint16_t>(c.cookie >> 32), gen = static_cast<uint16_t>(c.cookie >> 48);
    auto i = static_cast<uint32_t>(c.cookie);
    if (slot >= pool_.size()) {
        return;
    }
    request& r = *pool_[slot];
    // A completion for a call that already failed (or a previous use of the slot): its
    // buffers are not ours to touch any more.
    if (!r.active || r.generation != gen || !r.in_progress() || i >= r.p->steps.size()) {
        return;
    }
    const plan_step& s = r.p->steps[i];
    if (c.withdrawn) {
        r.withdrawn_by   = c.peer;
        r.withdrawn_step = static_cast<int>(i);
        r.deadline_s     = std::min(r.deadline_s, now_s() + withdrawn_grace_s);
        return;
    }
    if (c.status != LOOM_SUCCESS && schedule::is_inc(s.kind)) {
        const offload* o = offload_of(*r.p);
        fail(r, c.status, o->failed_peer(), static_cast<int>(i), o->last_failure(), true);
        return;
    }
    if (c.status != LOOM_SUCCESS) {
        std::string why = c.status == LOOM_ERR_MISMATCH
                              ? other_call(c.peer, "sent a message of")
                              : "the connection to rank " + std::to_string(c.peer) + " failed";
        fail(r, c.status, c.peer, static_cast<int>(i), why, true);
        return;
    }
    if (s.kind == schedule::step_kind::recv_reduce) {
        r.kernel(r.at(s.dst_buf, s.dst), r.at(s.src_buf, s.src), r.at(buffer::staging, s.staging),
                 s.count);
    } else if (s.kind == schedule::step_kind::recv_copy) {
        std::memcpy(r.at(s.aux_buf, s.aux), r.at(s.dst_buf, s.dst), s.bytes);
    }
    complete(r, i);
}

namespace {
void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
}  // namespace

void engine_impl::count_traffic(const plan_step& s) {
    const auto bytes = static_cast<uint64_t>(s.bytes);
    switch (s.kind) {
        case schedule::step_kind::send:
            add(traffic_.sent_bytes, bytes);
            add(traffic_.sent_msgs, 1);
            break;
        case schedule::step_kind::recv:
        case schedule::step_kind::recv_copy:
        case schedule::step_kind::recv_reduce:
            add(traffic_.recv_bytes, bytes);
            add(traffic_.recv_msgs, 1);
            break;
        case schedule::step_kind::inc_push:
            add(traffic_.switch_sent_bytes, bytes);
            break;
        case schedule::step_kind::inc_pull:
            add(traffic_.switch_recv_bytes, bytes);
            break;
        default:
            break;
    }
}

traffic_counters engine_impl::traffic() const {
    traffic_counters t;
    t.sent_bytes        = traffic_.sent_bytes.load(std::memory_order_relaxed);
    t.recv_bytes        = traffic_.recv_bytes.load(std::memory_order_relaxed);
    t.sent_msgs         = traffic_.sent_msgs.load(std::memory_order_relaxed);
    t.recv_msgs         = traffic_.recv_msgs.load(std::memory_order_relaxed);
    t.switch_sent_bytes = traffic_.switch_sent_bytes.load(std::memory_order_relaxed);
    t.switch_recv_bytes = traffic_.switch_recv_bytes.load(std::memory_order_relaxed);
    return t;
}

void engine_impl::complete(request& r, uint32_t i) {
    r.state[i] = step_state::done;
    ++r.done_steps;
    const plan& p = *r.p;
    count_traffic(p.steps[i]);
    for (uint32_t k = p.steps[i].dependents_begin; k < p.steps[i].dependents_end; ++k) {
        uint32_t d = p.dependents[k];
        if (--r.waiting[d] == 0) {
            r.ready.push_back(d);
        }
    }
    if (r.done_steps == p.steps.size()) {
        steps_done(r);
    }
}

void engine_impl::finish(request& r) {
    const plan& p = *r.p;
    if (r.buffers.op == LOOM_AVG && p.reduced_output_bytes > 0) {
        finish_average(r.output, p.dtype, p.reduced_output_bytes / p.element_bytes, p.info.nranks);
    }
    r.status.store(LOOM_SUCCESS, std::memory_order_release);  // R: test/wait acquire it
    if (!p.acks_when_steps_done) {
        send_acks(r);
    }
}

std::string engine_impl::describe(const request& r, int step) const {
    std::string out = "rank " + std::to_string(config_.rank) + ": " +
                      std::string(schedule::collective_name(r.p->info.coll)) + " #" +
                      std::to_string(r.seq) + " (" + r.p->info.algorithm + ")";
    if (step >= 0) {
        const plan_step& s = r.p->steps[step];
        out += " at step " + std::to_string(step) + " (" +
               std::string(schedule::step_kind_name(s.kind));
        if (schedule::is_transfer(s.kind)) {
            out += (s.kind == schedule::step_kind::send ? " to rank " : " from rank ") +
                   std::to_string(s.peer);
        }
        out += ")";
    }
    return out;
}

void engine_impl::fail(request& r, loom_status_t code, int peer, int step, const std::string& why,
                       bool notify) {
    r.why.code       = code;
    r.why.rank       = config_.rank;
    r.why.peer       = peer;
    r.why.seq        = r.seq;
    r.why.step       = step;
    r.why.collective = std::string(schedule::collective_name(r.p->info.coll));
    r.why.message    = describe(r, step) + ": " + loom_status_string(code) + ": " + why;
    LOOM_LOG_WARN(log::subsystem::coll, "%s", r.why.message.c_str());
    withdraw(r);
    r.status.store(code, std::memory_order_release);  // R: the caller owns the buffers again
    if (notify) {
        notify_peers(r, code);
    }
}

// A failed call hands its buffers back to the caller: first every operation still posted
// for it is cancelled, so no driver reads or writes them afterwards (driver.hh cancel).
void engine_impl::withdraw(request& r) {
    for (uint32_t i = 0; i < r.state.size(); ++i) {
        if (r.state[i] == step_state::posted) {
            if (schedule::is_inc(r.p->steps[i].kind)) {
                offload_of(*r.p)->cancel(cookie_of(r, i));
            } else {
                fast_.cancel(fast_.ctx, cookie_of(r, i));
            }
        }
    }
}

void engine_impl::time_out(request& r) {
    if (r.probing) {
        if (now_s() >= r.probe_until_s) {
            conclude_probe(r);
        }
        return;
    }
    // A collective of more than two ranks asks first who never arrived (call_control.cc).
    if (r.withdrawn_by < 0 && !r.p2p && config_.size > 2 && r.answers.empty()) {
        start_probe(r);
        return;
    }
    time_out(r, -1, "");
}

void engine_impl::time_out(request& r, int culprit, const std::string& found) {
    if (r.withdrawn_by >= 0) {
        fail(r, LOOM_ERR_PEER_FAILURE, r.withdrawn_by, r.withdrawn_step,
             "rank " + std::to_string(r.withdrawn_by) +
                 " withdrew its message (its own call failed) and its reason did not arrive",
             true);
        return;
    }
    // The step it waits for: the first posted step not done, else the first waiting one.
    auto first_in = [&](step_state s) {
        auto it = std::find(r.state.begin(), r.state.end(), s);
        return it == r.state.end() ? -1 : static_cast<int>(it - r.state.begin());
    };
    int step = first_in(step_state::posted);
    step     = step >= 0 ? step : first_in(step_state::waiting);
    int peer =
        step >= 0 && schedule::is_transfer(r.p->steps[step].kind) ? r.p->steps[step].peer : -1;
    std::string why = peer >= 0 ? "waited past the deadline for rank " + std::to_string(peer)
                                : "waited past the deadline";
    if (step >= 0 && schedule::is_inc(r.p->steps[step].kind) && r.p->info.node_local) {
        // The node's flat segment: the offload knows whose part is missing.
        peer = offload_of(*r.p)->awaited_peer();
        why  = peer >= 0 ? "waited past the deadline for rank " + std::to_string(peer) +
                              "'s part on the node's flat segment"
                         : "waited past the deadline on the node's flat segment";
    } else if (step >= 0 && schedule::is_inc(r.p->steps[step].kind)) {
        // The aggregation node never completed the segment (a rank that did not join the
        // collective, a node that stalled or lost every copy).
        why += " for the aggregation node's result";
    }
    if (culprit >= 0) {
        why += "; " + found;
        peer = culprit;
    }
    fail(r, LOOM_ERR_TIMEOUT, peer, step, why, true);
}

// Tells every other rank that this call failed, so those waiting for us (or for someone
// waiting for us) return too. Best effort: a full queue drops the notice, and their own
// deadline still ends their wait.
void engine_impl::notify_peers(const request& r, loom_status_t code) {
    // A timeout on the node's flat segment: every rank there waits for the same late rank
    // (each reads every rank's call word) and times out at its own deadline naming it; only
    // the late rank is told, so that its call fails when it comes instead of succeeding.
    if (r.p->info.node_local && code == LOOM_ERR_TIMEOUT && r.why.peer >= 0) {
        send_control(r.why.peer, drivers::control_tag_bit | r.call_tag,
                     notice_imm(code, config_.rank, r.why.peer));
        return;
    }
    send_control_to_others(drivers::control_tag_bit | r.call_tag,
                           notice_imm(code, config_.rank, r.why.peer));
}

// The rank a notice blames, seen from here: a notice that blames this very rank (it was late,
// the reporter gave up on it) names the reporter, the peer whose call failed.
int engine_impl::blamed(const notice& n) const {
    return n.culprit >= 0 && n.culprit != config_.rank ? n.culprit : n.from;
}

void engine_impl::on_control(const drivers::completion& c) {
    if (wire::comm_of(c.tag) != (config_.comm_id & ((1u << wire::comm_bits) - 1))) {
        return;
    }
    switch (wire::control_kind_of(c.tag)) {
        case wire::control_kind::hello:
            on_hello(c);
            return;
        case wire::control_kind::ack:
            on_ack(c);
            return;
        case wire::control_kind::query:
            on_query(c);
            return;
        case wire::control_kind::answer:
            on_answer(c);
            return;
        case wire::control_kind::notice:
            break;
    }
    notice n = notice_of(c);
    for (auto& slot : pool_) {
        request& r = *slot;
        if (r.active && r.in_progress() && wire::seq_of(r.call_tag) == n.seq && r.p2p == n.p2p) {
            fail(r, n.code, blamed(n), -1, reported(n), false);
            return;
        }
    }
    if (early_.size() == max_early_notices) {
        early_.erase(early_.begin());
    }
    early_.push_back(n);
}

void engine_impl::apply_early_notices(request& r) {
    uint32_t seq = wire::seq_of(r.call_tag);
    for (size_t k = 0; k < early_.size(); ++k) {
        if (early_[k].seq == seq && early_[k].p2p == r.p2p) {
            notice n = early_[k];
            early_.erase(early_.begin() + static_cast<long>(k));
            fail(r, n.code, blamed(n), -1, reported(n), false);
            return;
        }
    }
}

}  // namespace loom::engine
