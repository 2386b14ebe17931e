// SPDX-License-Identifier: Apache-2.0
// The engine: a run-to-completion loop over the driver's completions (DPDK l2fwd's shape):
// poll a burst, finish the steps those completions belong to, post the steps that became
// ready, and check deadlines behind a cheap counter. Step execution and failure handling
// live in step_exec.cc; this file owns the pool, the loop and the waits.
#include "engine/engine_impl.hh"

#include <algorithm>
#include <cstring>

#include "base/check.hh"
#include "base/clock.hh"

namespace loom::engine {
namespace {
constexpr double settle_controls_s = 0.5;
}  // namespace

result<std::unique_ptr<engine>> engine::create(const engine_config& config,
                                               drivers::endpoint& endpoint) {
    if (config.max_requests < 1 || config.max_requests > 4096) {
        return invalid_argument("engine: max_requests must be 1..4096, got " +
                                std::to_string(config.max_requests));
    }
    return std::unique_ptr<engine>(new engine_impl(config, endpoint));
}

engine_impl::engine_impl(const engine_config& config, drivers::endpoint& endpoint)
    : config_(config), fast_(endpoint.fast()), threaded_(config.progress == progress_mode::thread) {
    sources_.push_back(source_of(endpoint));
    if (config.in_network != nullptr) {
        sources_.push_back(source_of(*config.in_network));
    }
    if (config.node_local != nullptr) {
        sources_.push_back(source_of(*config.node_local));
    }
    pool_.reserve(config.max_requests);
    for (int i = 0; i < config.max_requests; ++i) {
        pool_.push_back(std::make_unique<request>());
        pool_.back()->slot = static_cast<uint16_t>(i);
    }
    early_.reserve(64);
    early_hellos_.reserve(256);
    controls_.reserve(256);
    if (threaded_) {
        thread_ = std::thread([this] { progress_thread(); });
    }
}

engine_impl::~engine_impl() {
    stop_.store(true, std::memory_order_release);  // R: pairs with the acquire in the loop
    if (threaded_) {
        std::lock_guard<std::mutex> hold(lock_);
        if (asleep_.load(std::memory_order_relaxed)) {
            sleeping_on_.ring(sleeping_on_.ctx);  // the thread stops now, not after its sleep
        }
    }
    if (thread_.joinable()) {
        thread_.join();
    }
    // Failure notices and acknowledgements a full queue refused: peers wait for them, so
    // they get a short, bounded chance to leave before the endpoint closes.
    settle_controls();
}

result<request*> engine_impl::start(std::shared_ptr<const plan> p, const call_buffers& buffers,
                                    uint32_t seq, bool p2p, double timeout_s) {
    auto hold = enter();
    auto unused =
        std::find_if(pool_.begin(), pool_.end(), [](const auto& slot) { return !slot->active; });
    if (unused == pool_.end()) {
        return status(LOOM_ERR_NO_RESOURCE,
                      "rank " + std::to_string(config_.rank) + ": more than " +
                          std::to_string(config_.max_requests) + " calls in flight");
    }
    request* r = unused->get();
    absorb_arrivals();
    LOOM_CHECK(prepare(*r, std::move(p), buffers, seq, p2p, timeout_s));
    if (r->in_progress()) {
        apply_early_notices(*r);
    }
    if (r->in_progress()) {
        drain(*r);
    }
    if (asleep_.load(std::memory_order_relaxed)) {
        sleeping_on_.ring(sleeping_on_.ctx);  // after the posts, under the lock (waker.hh)
    }
    return r;
}

status engine_impl::prepare(request& r, std::shared_ptr<const plan> p, const call_buffers& b,
                            uint32_t seq, bool p2p, double timeout_s) {
    const plan& pl = *p;
    loom_op_t op   = b.op == LOOM_AVG ? LOOM_SUM : b.op;
    r.kernel       = reduce_kernel(pl.dtype, op);
    if (!r.kernel && schedule::is_reduction(pl.info.coll)) {
        return invalid_argument("no reduction for dtype " + std::to_string(pl.dtype) + " and op " +
                                std::to_string(b.op));
    }
    r.p           = std::move(p);
    r.buffers     = b;
    r.output      = static_cast<std::byte*>(b.output);
    r.input       = static_cast<const std::byte*>(b.input);
    r.input_aside = r.input;
    // In place (or any overlap): the schedule may overwrite output elements before it has
    // read the input ones. Those inputs are copied aside first: the ranges the plan found at
    // risk (in_place.hh), or the whole input for an overlap it did not analyse.
    auto in_lo  = reinterpret_cast<uintptr_t>(b.input),
         out_lo = reinterpret_cast<uintptr_t>(b.output);
    if (pl.input_bytes > 0 && pl.output_bytes > 0 && in_lo < out_lo + pl.output_bytes &&
        out_lo < in_lo + pl.input_bytes) {
        const auto shift = static_cast<int64_t>(in_lo - out_lo);
        if (pl.in_place_analysed && shift == pl.in_place_shift) {
            if (!pl.in_place_aside.empty()) {
                r.input_copy.resize(pl.input_bytes);
                for (const auto& [lo, hi] : pl.in_place_aside) {
                    std::memcpy(r.input_copy.data() + lo, r.input + lo, hi - lo);
                }
                r.input_aside = r.input_copy.data();
            }
        } else {
            r.input_copy.resize(pl.input_bytes);
            std::memcpy(r.input_copy.data(), b.input, pl.input_bytes);
            r.input = r.input_aside = r.input_copy.data();
        }
    }
    r.scratch.resize(pl.scratch_bytes);
    r.staging.resize(pl.staging_bytes);
    r.waiting.resize(pl.steps.size());
    r.state.assign(pl.steps.size(), step_state::waiting);
    for (size_t i = 0; i < pl.steps.size(); ++i) {
        r.waiting[i] = pl.steps[i].ndeps;
    }
    r.ready.assign(pl.roots.rbegin(), pl.roots.rend());
    r.blocked.clear();
    r.done_steps     = 0;
    r.call_tag       = wire::call_bits(config_.comm_id, seq, p2p);
    r.seq            = seq;
    r.p2p            = p2p;
    r.deadline_s     = now_s() + (timeout_s < 0 ? config_.timeout_s : timeout_s);
    r.generation     = static_cast<uint16_t>(r.generation + 1);
    r.why            = failure{};
    r.withdrawn_by   = -1;
    r.withdrawn_step = -1;
    r.active         = true;
    r.status.store(LOOM_IN_PROGRESS, std::memory_order_release);
    if (!p2p) {
        last_started_seq_ = wire::seq_of(r.call_tag);
        started_any_      = true;
    }
    begin_acks(r);
    if (!r.in_progress()) {
        return status::ok();  // a peer's hello already proved a mismatch
    }
    if (pl.steps.empty()) {
        steps_done(r);
    }
    return status::ok();
}

bool engine_impl::poll_once() {
    if (!controls_.empty()) {
        flush_controls();
    }
    bool busy = false;
    for (const poll_source& s : sources_) {
        busy |= poll_source_once(s) > 0;
    }
    for (auto& slot : pool_) {
        request& r = *slot;
        if (r.active && r.in_progress() && (!r.ready.empty() || !r.blocked.empty())) {
            busy |= drain(r);
        }
    }
    // Deadlines behind a counter: a clock read every 64 idle passes is plenty for
    // timeouts measured in seconds.
    if (!busy && (++idle_passes_ & 63) == 0) {
        check_deadlines();
    }
    return busy;
}

int engine_impl::poll_source_once(const poll_source& s) {
    drivers::completion done[poll_burst];
    int n = s.poll(s.ctx, done, poll_burst);
    for (int i = 0; i < n; ++i) {
        on_completion(done[i]);
    }
    return n;
}

// Every entry that touches the state comes through here.
std::unique_lock<std::mutex> engine_impl::enter() {
    if (threaded_) {
        return std::unique_lock<std::mutex>(lock_);
    }
    if (abort_pending_.load(std::memory_order_acquire)) {  // A: pairs with R in abort()
        apply_abort();
    }
    return {};
}

bool engine_impl::progress() {
    auto hold = enter();
    return poll_once();
}

// After an idle pass: spin or yield, then sleep until a source has work. The sleep is
// announced, then one more pass runs, so work published before the announcement is found
// by the pass and work published after it wakes the sleep (drivers/waker.hh). A refused
// control message is retried by passes only, so it keeps the caller napping. The progress
// thread sleeps only on a waker that start() can ring: the caller's posts are work too.
void engine_impl::rest(idle_policy& idle, bool busy) {
    if (!idle.after_poll(busy)) {
        return;
    }
    drivers::waker w;
    uint64_t token = 0;
    bool found     = false;
    {
        auto hold = enter();
        if (controls_.empty()) {
            w = common_waker(sources_.data(), static_cast<int>(sources_.size()));
        }
        if (threaded_ && w.ring == nullptr) {
            w = {};
        }
        if (w) {
            token        = w.arm(w.ctx);
            found        = poll_once();
            sleeping_on_ = w;
            asleep_.store(threaded_ && !found, std::memory_order_relaxed);
        }
    }
    if (!w) {
        idle.nap();
        return;
    }
    w.sleep(w.ctx, token, found ? 0 : max_sleep_ns);  // outside the lock: start() may post
    asleep_.store(false, std::memory_order_relaxed);
    if (found) {
        idle.reset();
    }
}

loom_status_t engine_impl::test(request* r) {
    if (config_.progress == progress_mode::caller && r->in_progress()) {
        progress();
    }
    return static_cast<loom_status_t>(r->status.load(std::memory_order_acquire));
}

loom_status_t engine_impl::wait(request* r, double timeout_s) {
    double give_up = timeout_s < 0 ? r->deadline_s : std::min(r->deadline_s, now_s() + timeout_s);
    idle_policy idle;
    while (r->in_progress()) {
        bool busy = false;
        if (!threaded_) {
            busy = progress();
            rest(idle, busy);
        } else if (idle.after_poll(false)) {
            idle.nap();  // the progress thread does the work
        }
        if (!busy && now_s() >= give_up) {
            auto hold = enter();
            if (r->in_progress()) {
                time_out(*r);
            }
        }
    }
    settle_controls();
    return static_cast<loom_status_t>(r->status.load(std::memory_order_acquire));
}

// A failure notice a full queue refused must still reach the peers that wait for it (or they
// blame this rank, or wait their deadline out): before the caller gets its failed call back
// (and may stop progressing), the queue gets a short, bounded chance to take it.
void engine_impl::settle_controls() {
    if (controls_.empty()) {
        return;
    }
    auto hold    = enter();
    double until = now_s() + settle_controls_s;
    while (!controls_.empty() && now_s() < until) {
        poll_source_once(sources_.front());
        flush_controls();
    }
}

const failure& engine_impl::failure_of(const request* r) const {
    return r->why;
}

void engine_impl::release(request* r) {
    auto hold = enter();
    r->active = false;
    r->p.reset();
}

void engine_impl::abort(loom_status_t code, const std::string& why) {
    if (threaded_) {
        std::lock_guard<std::mutex> hold(lock_);
        fail_all(code, why);
        return;
    }
    {
        std::lock_guard<std::mutex> hold(abort_lock_);
        abort_code_ = code;
        abort_why_  = why;
    }
    abort_pending_.store(true, std::memory_order_release);  // R: pairs with A in enter()
}

void engine_impl::apply_abort() {
    loom_status_t code;
    std::string why;
    {
        std::lock_guard<std::mutex> hold(abort_lock_);
        abort_pending_.store(false, std::memory_order_relaxed);
        code = abort_code_;
        why  = std::move(abort_why_);
    }
    fail_all(code, why);
}

void engine_impl::fail_all(loom_status_t code, const std::string& why) {
    for (auto& slot : pool_) {
        if (slot->active && slot->in_progress()) {
            fail(*slot, code, -1, -1, why, /*notify=*/false);
        }
    }
}

void engine_impl::check_deadlines() {
    double now = now_s();
    for (auto& slot : pool_) {
        if (slot->active && slot->in_progress() && now >= slot->deadline_s) {
            time_out(*slot);
        }
    }
}

void engine_impl::progress_thread() {
    idle_policy idle;
    // A: pairs with the release store in the destructor.
    while (!stop_.load(std::memory_order_acquire)) {
        rest(idle, progress());
    }
}

}  // namespace loom::engine
