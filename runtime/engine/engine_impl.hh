// Internal: the engine's state. engine.cc runs the loop; step_exec.cc executes steps and
// handles completions and failures.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.hh"
#include "engine/idle_policy.hh"
#include "engine/request.hh"
#include "engine/wire_tag.hh"

namespace loom::engine {

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
    bool poll_once();
    void check_deadlines();
    void progress_thread();
    // step_exec.cc
    bool drain(request& r);
    bool execute(request& r, uint32_t i);
    loom_status_t post_in_network(request& r, uint32_t i);
    void on_completion(const drivers::completion& c);
    void complete(request& r, uint32_t i);
    void count_traffic(const plan_step& s);
    void finish(request& r);
    void fail(request& r, loom_status_t code, int peer, int step, const std::string& why,
              bool notify);
    void time_out(request& r);
    void withdraw(request& r);
    void notify_peers(const request& r, loom_status_t code);
    void on_control(const drivers::completion& c);
    void apply_early_notices(request& r);
    std::string describe(const request& r, int step) const;

    struct notice {
        uint32_t seq = 0;
        bool p2p     = false;
        int from = -1, culprit = -1;
        loom_status_t code = LOOM_SUCCESS;
    };
    static notice notice_of(const drivers::completion& c);
    static std::string reported(const notice& n);

    engine_config config_;
    const drivers::fast_path& fast_;
    std::vector<std::unique_ptr<request>> pool_;
    std::vector<notice> early_;  // failures announced for calls not started here yet
    uint32_t idle_passes_ = 0;
    // One writer (the thread that progresses), readers take snapshots: relaxed loads and
    // stores, no read-modify-write, so counting costs a plain add per completed step.
    struct {
        std::atomic<uint64_t> sent_bytes{0}, recv_bytes{0}, sent_msgs{0}, recv_msgs{0};
        std::atomic<uint64_t> switch_sent_bytes{0}, switch_recv_bytes{0};
    } traffic_;
    std::mutex lock_;  // per pass and per call, never per step (thread mode)
    std::thread thread_;
    std::atomic<bool> stop_{false};
};

}  // namespace loom::engine
