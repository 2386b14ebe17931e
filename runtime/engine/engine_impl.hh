// SPDX-License-Identifier: Apache-2.0
// Internal: the engine's state. engine.cc runs the loop; step_exec.cc executes steps and
// handles completions and failures.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/wire_tag.hh"
#include "engine/engine.hh"
#include "engine/idle_policy.hh"
#include "engine/poll_source.hh"
#include "engine/request.hh"

namespace loom::engine {

/// The reason of a mismatch found with `peer`: "rank P <did> another call (…)", where `did`
/// says how it showed (sent a message of, started, completed).
inline std::string other_call(int peer, const char* did) {
    return "rank " + std::to_string(peer) + " " + did +
           " another call (different primitive, count, dtype, op, root or algorithm)";
}

class engine_impl final : public engine {
  public:
    engine_impl(const engine_config& config, drivers::endpoint& endpoint);
    ~engine_impl() override;

    result<request*> start(std::shared_ptr<const plan> p, const call_buffers& buffers, uint32_t seq,
                           bool p2p, double timeout_s) override;
    bool progress() override;
    loom_status_t test(request* r) override;
    loom_status_t wait(request* r, double timeout_s) override;
    const failure& failure_of(const request* r) const override;
    void release(request* r) override;
    void abort(loom_status_t code, const std::string& why) override;
    traffic_counters traffic() const override;

  private:
    // engine.cc
    status prepare(request& r, std::shared_ptr<const plan> p, const call_buffers& b, uint32_t seq,
                   bool p2p, double timeout_s);
    std::unique_lock<std::mutex> enter();
    void apply_abort();
    void fail_all(loom_status_t code, const std::string& why);
    bool poll_once();
    /// Polls one source for up to poll_burst completions and handles them; returns how many.
    int poll_source_once(const poll_source& s);
    static constexpr int poll_burst = 32;
    void rest(idle_policy& idle, bool busy);
    void check_deadlines();
    void progress_thread();
    // step_exec.cc
    bool drain(request& r);
    bool execute(request& r, uint32_t i);
    loom_status_t post_in_network(request& r, uint32_t i);
    /// The offload that runs a plan's in-network steps: the node-local one for a
    /// node_local plan (the flat segment), else the aggregation node's.
    offload* offload_of(const plan& p) const {
        return p.info.node_local ? config_.node_local : config_.in_network;
    }
    void on_completion(const drivers::completion& c);
    void complete(request& r, uint32_t i);
    void count_traffic(const plan_step& s);
    void finish(request& r);
    void fail(request& r, loom_status_t code, int peer, int step, const std::string& why,
              bool notify);
    void time_out(request& r);
    void time_out(request& r, int culprit, const std::string& found);
    void withdraw(request& r);
    void notify_peers(const request& r, loom_status_t code);
    void on_control(const drivers::completion& c);
    void apply_early_notices(request& r);
    // call_control.cc: acknowledgements, hellos, probes, reliable control messages
    void absorb_arrivals();
    void send_control(int peer, uint64_t tag, uint64_t imm);
    void send_control_to_others(uint64_t tag, uint64_t imm);  // every rank but this one
    bool flush_controls();
    void settle_controls();
    void begin_acks(request& r);
    void steps_done(request& r);
    void send_acks(const request& r);
    request* find_call(uint32_t seq, bool p2p, int from, bool from_ack_to);
    void on_hello(const drivers::completion& c);
    void on_ack(const drivers::completion& c);
    void on_query(const drivers::completion& c);
    void on_answer(const drivers::completion& c);
    void start_probe(request& r);
    void conclude_probe(request& r);
    bool started_already(uint32_t seq_field) const;
    std::string describe(const request& r, int step) const;

    struct notice {
        uint32_t seq = 0;
        bool p2p     = false;
        int from = -1, culprit = -1;
        loom_status_t code = LOOM_SUCCESS;
    };
    static notice notice_of(const drivers::completion& c);
    static std::string reported(const notice& n);
    int blamed(const notice& n) const;

    engine_config config_;
    const drivers::fast_path& fast_;
    std::vector<poll_source> sources_;  // the driver first, then the in-network offload
    std::vector<std::unique_ptr<request>> pool_;
    std::vector<notice> early_;  // failures announced for calls not started here yet
    struct hello {
        uint32_t seq       = 0;
        bool p2p           = false;
        int from           = -1;
        uint64_t signature = 0;
    };
    std::vector<hello> early_hellos_;  // signatures of calls not started here yet
    struct control {
        int peer;
        uint64_t tag, imm;
    };
    std::vector<control> controls_;  // refused by a full queue: sent again on the next pass
    uint32_t last_started_seq_ = 0;  // wire seq field of the latest collective started
    bool started_any_          = false;
    uint32_t idle_passes_      = 0;
    // One writer (the thread that progresses), readers take snapshots: relaxed loads and
    // stores, no read-modify-write, so counting costs a plain add per completed step.
    struct {
        std::atomic<uint64_t> sent_bytes{0}, recv_bytes{0}, sent_msgs{0}, recv_msgs{0};
        std::atomic<uint64_t> switch_sent_bytes{0}, switch_recv_bytes{0};
    } traffic_;
    // Thread mode: the progress thread and the caller take turns, one lock per pass and per
    // call, never per step. Caller mode: the caller's thread is the only one (loom.h: one
    // thread per communicator), so no lock; abort() may come from another thread and
    // leaves a note that the next entry applies.
    const bool threaded_;
    std::mutex lock_;
    std::atomic<bool> abort_pending_{false};
    std::mutex abort_lock_;  // guards the note (caller mode), taken only by abort and its reader
    loom_status_t abort_code_ = LOOM_SUCCESS;
    std::string abort_why_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    // Thread mode: the waker the progress thread sleeps on (set under lock_) and whether it
    // sleeps, so start() rings it only then: a call does not wait out the sleep.
    drivers::waker sleeping_on_;
    std::atomic<bool> asleep_{false};
};

}  // namespace loom::engine
