// SPDX-License-Identifier: Apache-2.0
// The fault wrapper (fault.hh): an endpoint whose fast path sits in front of another's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "drivers/common/completion_ring.hh"
#include "drivers/common/wrapper.hh"
#include "drivers/fault/fault.hh"
#include "drivers/fault/fault_params.hh"
#include "drivers/fault_dice.hh"
#include "drivers/registry_internal.hh"

namespace loom::drivers {
namespace fault {
namespace {

// A message held back by reorder waits at most this long for a next send to overtake it.
constexpr double min_hold_s = 0.001;

/// One user operation; its index is the cookie the inner driver sees.
struct op {
    uint64_t cookie;
    uint32_t inner_pending;  // inner completions still to come (2 for a duplicate)
    loom_status_t status;    // the first non-success among them
    size_t bytes;
    bool live      = false;  // taken and not yet handed back
    bool cancelled = false;  // withdrawn by cancel(): what still comes is swallowed
};

/// A send on its way to the inner driver.
struct message {
    int peer;
    uint64_t tag, imm;
    const void* buf;
    size_t len;
    uint32_t op;
    uint32_t copies;  // still to post: 1, or 2 for a duplicate
    double due_s;     // not before (delay)
};

class fault_endpoint final : public common::wrapper_endpoint<fault_endpoint> {
  public:
    fault_endpoint(std::unique_ptr<endpoint> inner, const fault_config& c, int rank, int size);
    // The inner endpoint goes first: it may still send from copies_ while it closes.
    ~fault_endpoint() override { inner_.reset(); }
    caps capabilities() const override;
    status connect() override { return inner_->connect(); }

    const fault_stats& stats() const { return stats_; }

    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const;
    /// Withdraws the operation with `cookie` (driver.hh): a send still in the wrapper (held
    /// back or delayed) goes on later from a private copy, the rest is the inner driver's
    /// to withdraw; no completion either way.
    bool cancel(uint64_t cookie);
    /// Messages the wrapper still holds (delayed, held back for reordering) or completions
    /// it made itself shorten the sleep (common/wrapper.hh): measured here, where the
    /// endpoint may be used; sleep() may run while another thread posts.
    uint64_t arm_sleep();

  private:
    uint32_t take_op(uint64_t cookie, uint32_t inner_pending);
    void release_op(uint32_t i);
    /// Points `m` (a message of cancelled op `i` not yet posted) at a copy of its bytes.
    void keep_copy(message& m, uint32_t i);
    loom_status_t post_inner(message& m);
    void drain(double now);
    void release_held(double now, bool all);

    // By op: the bytes of cancelled sends (the destructor closes the inner driver first).
    std::vector<std::unique_ptr<uint8_t[]>> copies_;
    fault_config config_;
    dice dice_;
    size_t dup_limit_ = 0;
    fault_stats stats_;
    std::vector<op> ops_;
    std::vector<uint32_t> free_ops_;
    common::completion_ring<message> outbox_;  // in posting order (after reordering)
    std::vector<message> held_;                // by peer: a message waiting to be overtaken
    std::vector<bool> has_held_;
    int held_count_ = 0;
    // Drops and refusals (cookie = op index): done without the inner driver.
    common::completion_ring<completion> local_;
};

fault_endpoint::fault_endpoint(std::unique_ptr<endpoint> inner, const fault_config& c, int rank,
                               int size)
    : wrapper_endpoint(std::move(inner), "fault:"), config_(c) {
    fast_      = fast_path_of(this);
    dice_      = dice(c.drop, c.dup, c.reorder, rank_seed(c.seed, rank));
    dup_limit_ = inner_->capabilities().eager_limit;
    ops_.resize(c.max_ops);
    free_ops_.resize(c.max_ops);
    for (uint32_t i = 0; i < c.max_ops; ++i) {
        free_ops_[i] = c.max_ops - 1 - i;
    }
    outbox_.init(c.max_ops);
    local_.init(c.max_ops);
    held_.resize(size_t(size));
    has_held_.assign(size_t(size), false);
}

caps fault_endpoint::capabilities() const {
    caps c = inner_->capabilities();
    c.name = name_.c_str();
    return c;
}

uint32_t fault_endpoint::take_op(uint64_t cookie, uint32_t inner_pending) {
    uint32_t i = free_ops_.back();
    free_ops_.pop_back();
    ops_[i] = op{cookie, inner_pending, LOOM_SUCCESS, 0, true, false};
    return i;
}

void fault_endpoint::release_op(uint32_t i) {
    if (ops_[i].cancelled) [[unlikely]] {
        copies_[i].reset();
    }
    ops_[i].live = false;
    free_ops_.push_back(i);
}

loom_status_t fault_endpoint::post_inner(message& m) {
    const fast_path& f = inner_->fast();
    while (m.copies > 0) {
        loom_status_t st = f.post_send(f.ctx, m.peer, m.tag, m.imm, m.buf, m.len, m.op);
        if (st != LOOM_SUCCESS) {
            return st;
        }
        --m.copies;
    }
    return LOOM_SUCCESS;
}

void fault_endpoint::drain(double now) {
    while (!outbox_.empty()) {
        message& m = outbox_.front();
        if (m.due_s > now) {
            return;  // FIFO with one delay: later ones are due later
        }
        loom_status_t st = post_inner(m);
        if (st == LOOM_ERR_NO_RESOURCE) {
            return;  // the inner queue is full: retry on the next poll
        }
        if (st != LOOM_SUCCESS) {
            // Accepted by us earlier, refused by the inner driver now: complete it with that.
            local_.push(completion{m.op, st, m.peer, 0, m.tag, m.imm});
        }
        outbox_.pop();
    }
}

void fault_endpoint::release_held(double now, bool all) {
    double hold_s = std::max(min_hold_s, double(config_.delay_us) * 1e-6);
    for (size_t p = 0; p < held_.size() && held_count_ > 0; ++p) {
        if (has_held_[p] && (all || now - held_[p].due_s >= hold_s)) {
            held_[p].due_s = now + double(config_.delay_us) * 1e-6;
            outbox_.push(held_[p]);
            has_held_[p] = false;
            --held_count_;
        }
    }
}

loom_status_t fault_endpoint::post_send(int peer, uint64_t tag, uint64_t imm, const void* buf,
                                        size_t len, uint64_t cookie) {
    const fast_path& f = inner_->fast();
    if ((tag & control_tag_bit) != 0) {
        return f.post_send(f.ctx, peer, tag, imm, buf, len, cookie);  // notices pass through
    }
    if (peer < 0 || size_t(peer) >= held_.size() || (buf == nullptr && len > 0)) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (free_ops_.empty()) {
        return LOOM_ERR_NO_RESOURCE;
    }
    ++stats_.sends;
    double now = now_s();
    if (dice_.drop()) {
        ++stats_.dropped;
        // Holds an op until poll() hands the completion out, so local_ cannot overflow.
        local_.push(completion{take_op(cookie, 0), LOOM_SUCCESS, peer, len, tag, imm});
        return LOOM_SUCCESS;
    }
    uint32_t copies = 1;
    if (dice_.duplicate() && len <= dup_limit_) {
        ++stats_.duplicated;
        copies = 2;
    }
    message m{peer,   tag,
              imm,    buf,
              len,    take_op(cookie, copies),
              copies, now + double(config_.delay_us) * 1e-6};
    stats_.delayed += config_.delay_us > 0 ? 1 : 0;
    if (dice_.reorder() && !has_held_[size_t(peer)]) {
        ++stats_.reordered;
        m.due_s                 = now;  // the hold starts now; release_held re-stamps it
        held_[size_t(peer)]     = m;
        has_held_[size_t(peer)] = true;
        ++held_count_;
        return LOOM_SUCCESS;
    }
    outbox_.push(m);
    if (has_held_[size_t(peer)]) {  // this one overtook the held one: now it follows
        held_[size_t(peer)].due_s = m.due_s;
        outbox_.push(held_[size_t(peer)]);
        has_held_[size_t(peer)] = false;
        --held_count_;
    }
    drain(now);
    return LOOM_SUCCESS;
}

loom_status_t fault_endpoint::post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                                        uint64_t cookie) {
    if (free_ops_.empty()) {
        return LOOM_ERR_NO_RESOURCE;
    }
    uint32_t i         = take_op(cookie, 1);
    const fast_path& f = inner_->fast();
    loom_status_t st   = f.post_recv(f.ctx, peer, tag, imm, buf, len, i);
    if (st != LOOM_SUCCESS) {
        release_op(i);
    }
    return st;
}

int fault_endpoint::poll(completion* out, int max) {
    double now = now_s();
    if (held_count_ > 0) {
        release_held(now, false);
    }
    drain(now);
    int got = 0;
    for (; got < max && !local_.empty(); local_.pop()) {
        completion c = local_.front();
        auto i       = uint32_t(c.cookie);
        bool quiet   = ops_[i].cancelled;
        c.cookie     = ops_[i].cookie;
        release_op(i);
        if (!quiet) {
            out[got++] = c;
        }
    }
    if (got == max) {
        return got;
    }
    // The inner completions land in `out` and are translated in place.
    const fast_path& f = inner_->fast();
    int base           = got;  // reads run ahead of writes: translation compacts in place
    int n              = f.poll(f.ctx, out + base, max - base);
    for (int i = 0; i < n; ++i) {
        completion c = out[base + i];
        if (c.cookie == control_cookie) {
            out[got++] = c;
            continue;
        }
        op& o = ops_[c.cookie];
        if (o.status == LOOM_SUCCESS) {
            o.status = c.status;
        }
        o.bytes = std::max(o.bytes, c.bytes);
        if (--o.inner_pending > 0) {
            continue;  // the other copy of a duplicate is still out
        }
        bool quiet = o.cancelled;
        c.cookie   = o.cookie;
        c.status   = o.status;
        c.bytes    = o.bytes;
        release_op(uint32_t(&o - ops_.data()));
        if (!quiet) {
            out[got++] = c;
        }
    }
    return got;
}

void fault_endpoint::keep_copy(message& m, uint32_t i) {
    if (copies_[i] == nullptr) {
        copies_[i] = std::make_unique_for_overwrite<uint8_t[]>(m.len);
        if (m.len > 0) {
            std::memcpy(copies_[i].get(), m.buf, m.len);
        }
    }
    m.buf = copies_[i].get();
}

// The failure path: scans everything and may allocate.
bool fault_endpoint::cancel(uint64_t cookie) {
    auto n = uint32_t(ops_.size()), i = 0u;
    while (i < n && !(ops_[i].live && !ops_[i].cancelled && ops_[i].cookie == cookie)) {
        ++i;
    }
    if (i == n) {
        return false;  // nothing of ours (control notices have no op: nothing to withdraw)
    }
    for (size_t k = 0; k < local_.size(); ++k) {
        if (local_[k].cookie == i) {
            return false;  // done here (dropped or refused): the completion waits in poll
        }
    }
    if (copies_.empty()) {
        copies_.resize(ops_.size());
    }
    // A message still in the wrapper is posted later, from a copy: the receiver may wait
    // for it (a hole in the stream would hang it), so it is not simply dropped.
    bool withdrawn = false;
    for (size_t p = 0; p < held_.size(); ++p) {
        if (has_held_[p] && held_[p].op == i && held_[p].copies > 0) {
            keep_copy(held_[p], i);
            withdrawn = true;
        }
    }
    for (size_t k = 0; k < outbox_.size(); ++k) {
        message& m = outbox_[k];
        if (m.op == i && m.copies > 0) {
            keep_copy(m, i);
            withdrawn = true;
        }
    }
    // Copies already posted (a duplicate has two under one inner cookie) are the inner
    // driver's to withdraw; one whose completion waits there is simply done.
    op& o              = ops_[i];
    const fast_path& f = inner_->fast();
    while (o.inner_pending > 0 && f.cancel(f.ctx, i)) {
        --o.inner_pending;
        withdrawn = true;
    }
    if (!withdrawn) {
        return false;
    }
    o.cancelled = true;
    if (o.inner_pending == 0) {
        release_op(i);
    }
    return true;
}

uint64_t fault_endpoint::arm_sleep() {
    sleep_cap_ns_ = INT64_MAX;
    if (!local_.empty()) {
        sleep_cap_ns_ = 0;  // poll() has completions to hand out now
    } else if (!outbox_.empty() || held_count_ > 0) {
        // Only poll() posts them, when they are due: wake by the earliest.
        double due_s = std::max(min_hold_s, double(config_.delay_us) * 1e-6);
        if (!outbox_.empty()) {
            due_s = std::min(due_s, outbox_.front().due_s - now_s());
        }
        sleep_cap_ns_ = std::max(int64_t(due_s * 1e9), int64_t{0});
    }
    return arm_inner();
}

bool fault_endpoint::pending() const {
    const fast_path& f = inner_->fast();
    return held_count_ > 0 || !outbox_.empty() || !local_.empty() || f.pending(f.ctx);
}

result<double> probability(const loom::params::real_param& param) {
    double p = param.get();
    if (!(p >= 0 && p <= 1)) {
        return invalid_argument(std::string(param.name()) + "=" + std::to_string(p) +
                                " is not a probability in [0, 1]");
    }
    return p;
}

}  // namespace

result<fault_config> config_from_params() {
    fault_config c;
    LOOM_ASSIGN(c.drop, probability(params::drop));
    LOOM_ASSIGN(c.dup, probability(params::dup));
    LOOM_ASSIGN(c.reorder, probability(params::reorder));
    int64_t delay = params::delay_us.get();
    int64_t ops   = params::max_ops.get();
    if (delay < 0 || delay > int64_t{60} * 1000 * 1000) {
        return invalid_argument("LOOM_FAULT_DELAY_US=" + std::to_string(delay) +
                                " is out of range 0..60000000");
    }
    if (ops < 1 || ops > (int64_t{1} << 24)) {
        return invalid_argument("LOOM_FAULT_MAX_OPS=" + std::to_string(ops) +
                                " is out of range 1..16777216");
    }
    c.delay_us = uint64_t(delay);
    c.seed     = uint64_t(params::seed.get());
    c.max_ops  = uint32_t(ops);
    return c;
}

result<std::unique_ptr<endpoint>> wrap(std::unique_ptr<endpoint> inner, const fault_config& c,
                                       int rank, int size) {
    if (!(c.drop >= 0 && c.drop <= 1 && c.dup >= 0 && c.dup <= 1 && c.reorder >= 0 &&
          c.reorder <= 1) ||
        c.max_ops == 0 || size < 1) {
        return invalid_argument("fault: rank " + std::to_string(rank) +
                                ": probabilities must lie in [0, 1] and max_ops be positive");
    }
    LOOM_LOG_INFO(log::subsystem::net,
                  "fault: rank %d: drop %.3f dup %.3f reorder %.3f delay %llu us seed %llu", rank,
                  c.drop, c.dup, c.reorder, (unsigned long long)c.delay_us,
                  (unsigned long long)c.seed);
    return std::unique_ptr<endpoint>(new fault_endpoint(std::move(inner), c, rank, size));
}

const fault_stats* stats_of(const endpoint& ep) {
    const auto* f = dynamic_cast<const fault_endpoint*>(&ep);
    return f != nullptr ? &f->stats() : nullptr;
}

endpoint* inner_of(endpoint& ep) {
    auto* f = dynamic_cast<fault_endpoint*>(&ep);
    return f != nullptr ? &f->inner() : nullptr;
}

}  // namespace fault

result<std::unique_ptr<endpoint>> open_fault(std::unique_ptr<endpoint> inner,
                                             const endpoint_config& config) {
    LOOM_ASSIGN(auto c, fault::config_from_params());
    return fault::wrap(std::move(inner), c, config.rank, config.size);
}

}  // namespace loom::drivers
