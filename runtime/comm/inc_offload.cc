// SPDX-License-Identifier: Apache-2.0
// The in-network offload (inc_offload.hh).
#include "comm/inc_offload.hh"

#include <algorithm>
#include <cstring>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/hash.hh"
#include "base/log.hh"
#include "inc/node/join.hh"

namespace loom::comm {
namespace {

// Segments of calls in flight at once: max in-flight calls × segments per call, bounded.
constexpr size_t segment_table = 256;

bool key_less(const engine::offload_op& a, const engine::offload_op& b) {
    return a.seq != b.seq ? a.seq < b.seq : a.slot < b.slot;
}

}  // namespace

int inc_halves(schedule::collective coll, int rank, int root) {
    if (coll == schedule::collective::allreduce) {
        return 2;
    }
    return rank == root ? 2 : 1;  // reduce: push (+ pull at the root); broadcast: pull (+ push)
}

inc_offload::inc_offload(const inc_plan& plan, int rank,
                         std::unique_ptr<drivers::datagram_endpoint> l)
    : plan_(plan), rank_(rank), link_(std::move(l)), link_waker_(link_->idle_waker()), client_([&] {
          inc::client_config c;
          c.job           = plan.job;
          c.comm          = plan.comm;
          c.rank          = uint32_t(rank);
          c.members       = plan.members;
          c.window        = plan.slots;
          c.deterministic = plan.deterministic;
          c.deadline_s    = 1e9;  // the engine's call deadline governs (offload_op)
          return c;
      }()) {
    segments_.resize(segment_table);
}

inc_offload::~inc_offload() {
    retire();
}

void inc_offload::retire() {
    if (link_ && link_->alive() && !dead_) {
        inc::leave_node(*link_, plan_.job, plan_.comm, uint32_t(rank_));
    }
    retired_ = true;
    dead_    = true;
}

result<std::unique_ptr<inc_offload>> inc_offload::open(const inc_plan& plan, int rank) {
    auto l = drivers::connect_datagram(plan.address, plan.timeout_s);
    if (!l) {
        return status(l.error()).prefix("aggregation node " + plan.address + ": ");
    }
    std::unique_ptr<drivers::datagram_endpoint> up = std::move(l).value();
    if (plan.drop > 0 || plan.dup > 0 || plan.reorder > 0) {
        up = drivers::lossy_datagram(std::move(up), plan.drop, plan.dup, plan.reorder,
                                     plan.seed * golden_gamma + uint64_t(rank));
    }
    std::unique_ptr<inc_offload> o(new inc_offload(plan, rank, std::move(up)));
    LOOM_CHECK(o->join());
    return o;
}

status inc_offload::join() {
    inc::join_request req;
    req.members        = plan_.members;
    req.expected       = plan_.expected;
    req.slots          = plan_.slots;
    req.flags          = plan_.deterministic ? uint32_t(inc::join_deterministic) : 0u;
    req.parent_members = plan_.parent_members;
    req.parent_index   = plan_.parent_index;
    // The join and its answer ride the lossy path like everything else: ask again until
    // the node answers or the deadline passes.
    auto slots = inc::join_node(*link_, plan_.job, plan_.comm, uint32_t(rank_), req,
                                plan_.timeout_s, plan_.ticket, 0.05);
    return slots ? status::ok()
                 : status(slots.error()).prefix("aggregation node " + plan_.address + ": ");
}

inc_offload::segment* inc_offload::find_or_add(uint32_t seq, uint32_t slot) {
    segment* free_one = nullptr;
    for (segment& s : segments_) {
        if (!s.used) {
            free_one = free_one != nullptr ? free_one : &s;
            continue;
        }
        if (s.key().seq == seq && s.key().slot == slot) {
            return &s;
        }
    }
    if (free_one != nullptr) {
        *free_one      = segment{};
        free_one->used = true;
    }
    return free_one;
}

loom_status_t inc_offload::post(const engine::offload_op& op) {
    if (dead_) {
        return LOOM_ERR_PEER_FAILURE;
    }
    segment* s = find_or_add(op.seq, op.slot);
    if (s == nullptr) {
        return LOOM_ERR_NO_RESOURCE;  // the table is full: the engine posts it again later
    }
    s->halves_needed                      = inc_halves(op.coll, rank_, op.root);
    (op.push ? s->push : s->pull)         = op;
    (op.push ? s->has_push : s->has_pull) = true;
    ++s->halves_posted;
    return LOOM_SUCCESS;
}

inc_offload::segment* inc_offload::next_ready() {
    segment* best = nullptr;
    for (segment& s : segments_) {
        if (!s.used || s.started || s.halves_posted < s.halves_needed) {
            continue;
        }
        if (best == nullptr || key_less(s.key(), best->key())) {
            best = &s;
        }
    }
    return best;
}

status inc_offload::start(segment& s) {
    const engine::offload_op& k = s.key();
    inc::collective_shape shape;
    shape.flags = k.coll == schedule::collective::reduce      ? inc::flag_to_root
                  : k.coll == schedule::collective::broadcast ? inc::flag_from_root
                                                              : 0;
    shape.root  = uint16_t(k.root);
    shape.first = k.first;
    s.started   = true;
    running_    = &s;
    return client_.start(k.seq, k.dtype, k.op, s.has_push ? s.push.data : nullptr,
                         s.has_pull ? s.pull.data : nullptr, k.count, now_s(), shape);
}

void inc_offload::complete(segment& s, loom_status_t code, engine::offload_completion* out,
                           int* n) {
    if (s.has_push) {
        out[(*n)++] = {s.push.cookie, code};
    }
    if (s.has_pull) {
        out[(*n)++] = {s.pull.cookie, code};
    }
    if (running_ == &s) {
        running_ = nullptr;
    }
    s = segment{};
}

void inc_offload::fail_all(loom_status_t code, const std::string& why,
                           engine::offload_completion* out, int* n, int max) {
    failure_ = why;
    for (segment& s : segments_) {
        if (s.used && s.halves_posted > 0 && *n + 2 <= max) {
            complete(s, code, out, n);
        }
    }
    client_.abandon();
}

int inc_offload::poll(engine::offload_completion* out, int max) {
    int n = 0;
    if (retired_) {
        return 0;
    }
    if (dead_ || !link_->alive()) {
        if (!dead_) {
            dead_ = true;
            node_gone_.store(true, std::memory_order_release);
            LOOM_LOG_WARN(log::subsystem::inc, "rank %d: aggregation node %s is gone", rank_,
                          plan_.address.c_str());
        }
        fail_all(LOOM_ERR_PEER_FAILURE,
                 "rank " + std::to_string(rank_) + ": the aggregation node " + plan_.address +
                     " is gone (connection closed)",
                 out, &n, max);
        return n;
    }
    const double now  = now_s();
    const uint8_t* in = nullptr;
    size_t len        = 0;
    for (int burst = 0; burst < 64 && link_->recv(&in, &len); ++burst) {
        inc::header h;
        const uint8_t* payload = nullptr;
        if (inc::parse(in, len, &h, &payload) == inc::parse_error::none) {
            client_.on_packet(h, payload, now, *link_);
        }
    }
    if (running_ == nullptr && max >= 2) {
        if (segment* s = next_ready()) {
            if (status st = start(*s); !st) {
                failure_ = "rank " + std::to_string(rank_) + ": " + st.message();
                complete(*s, st.code(), out, &n);
                return n;
            }
        }
    }
    if (running_ != nullptr && max - n >= 2) {
        if (status st = client_.poll(now, *link_); !st) {
            failure_ = st.message();
            complete(*running_, st.code(), out, &n);
        } else if (client_.done()) {
            complete(*running_, LOOM_SUCCESS, out, &n);
        }
    }
    return n;
}

bool inc_offload::pending() const {
    return std::any_of(segments_.begin(), segments_.end(), [](const segment& s) { return s.used; });
}

drivers::waker inc_offload::idle_waker() {
    return link_waker_ ? drivers::wrapper_waker_of(this, link_waker_) : drivers::waker{};
}

uint64_t inc_offload::arm_sleep() {
    // With no segment running nothing on the link is awaited (a half still to be posted
    // comes from the engine's own passes): sleep no longer than an idle nap.
    wake_by_s_ = running_ != nullptr ? client_.next_timer_s() : now_s() + 50e-6;
    return link_waker_.arm(link_waker_.ctx);
}

void inc_offload::sleep(uint64_t token, int64_t timeout_ns) {
    double until_timer_ns = (wake_by_s_ - now_s()) * 1e9;
    int64_t ns = until_timer_ns < double(timeout_ns) ? std::max<int64_t>(0, int64_t(until_timer_ns))
                                                     : timeout_ns;
    link_waker_.sleep(link_waker_.ctx, token, ns);
}

bool inc_offload::cancel(uint64_t cookie) {
    for (segment& s : segments_) {
        if (!s.used ||
            !((s.has_push && s.push.cookie == cookie) || (s.has_pull && s.pull.cookie == cookie))) {
            continue;
        }
        if (running_ == &s) {
            client_.abandon();
            running_ = nullptr;
        }
        s = segment{};
        return true;
    }
    return false;
}

}  // namespace loom::comm
