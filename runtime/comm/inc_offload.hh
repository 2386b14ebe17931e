// SPDX-License-Identifier: Apache-2.0
// The communicator's in-network offload (engine/offload.hh) over inc/: a link to this
// rank's aggregation node (loom-switch) and an inc::client streaming the steps through it.
//
// Admission: open() connects and sends a join; the node answers joined (slots granted) or
// nack (no slots for this job, unknown parent, …). The communicator then agrees on the
// answers of all ranks (comm.cc) so that every rank uses `inc` or none does.
//
// Steps: the engine posts each inc_push / inc_pull as it becomes ready. The halves of one
// segment (seq, slot) are paired: all-reduce needs both, reduce's non-roots only the push,
// broadcast's non-roots only the pull. A complete segment becomes one client collective;
// segments run one at a time in (seq, slot) order, which is the same on every rank
// (collectives start in the same order everywhere), so no rank waits for a segment the
// others have not begun. Nothing on this path allocates: the segment table is sized once.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hh"
#include "drivers/datagram.hh"
#include "engine/offload.hh"
#include "inc/client/client.hh"

namespace loom::comm {

/// Where a rank's aggregation node is and what the communicator asks of it.
struct inc_plan {
    std::string address;  // this rank's (leaf) node
    uint64_t job = 0, comm = 0;
    std::string ticket;           // the job's ticket, raw bytes (ticket.hh); empty: unsigned
    uint32_t members        = 1;  // communicator size: contributor ids are ranks
    uint32_t expected       = 1;  // ranks under this rank's node
    uint32_t slots          = 8;
    bool deterministic      = true;
    uint32_t parent_members = 0;  // leaves of the communicator under one parent (0: none)
    uint32_t parent_index   = 0;  // this leaf's index among them
    double timeout_s        = 10;
    double drop = 0, dup = 0, reorder = 0;  // faults on this rank's sends (LOOM_INC_*)
    uint64_t seed = 1;
};

class inc_offload final : public engine::offload {
  public:
    /// Connects and asks for admission; an error says why (the caller falls back).
    static result<std::unique_ptr<inc_offload>> open(const inc_plan& plan, int rank);
    ~inc_offload() override;

    loom_status_t post(const engine::offload_op& op) override;
    int poll(engine::offload_completion* out, int max) override;
    bool cancel(uint64_t cookie) override;
    bool pending() const override;
    /// The link's waker, each sleep cut short where the client's next retransmission (or
    /// deadline) falls due; null when the link has none (shm: no doorbell).
    drivers::waker idle_waker() override;
    std::string last_failure() const override { return failure_; }
    uint64_t arm_sleep();
    void sleep(uint64_t token, int64_t timeout_ns);
    void ring() { link_waker_.ring_if_any(); }

    const std::string& address() const { return plan_.address; }
    /// True once the link to the node closed (the node died or dropped us).
    bool node_gone() const { return node_gone_.load(std::memory_order_acquire); }
    /// Leaves the node (the communicator agreed not to use it); posts fail from then on.
    void retire();
    const inc::client_stats& client_stats() const { return client_.stats(); }

  private:
    struct segment {
        bool used = false, started = false;
        bool has_push = false, has_pull = false;
        int halves_needed = 0, halves_posted = 0;
        engine::offload_op push, pull;  // as posted
        const engine::offload_op& key() const { return has_push ? push : pull; }
    };
    inc_offload(const inc_plan& plan, int rank, std::unique_ptr<drivers::datagram_endpoint> l);
    status join();
    segment* find_or_add(uint32_t seq, uint32_t slot);
    segment* next_ready();
    status start(segment& s);
    void complete(segment& s, loom_status_t code, engine::offload_completion* out, int* n);
    void fail_all(loom_status_t code, const std::string& why, engine::offload_completion* out,
                  int* n, int max);

    inc_plan plan_;
    int rank_;
    std::unique_ptr<drivers::datagram_endpoint> link_;
    drivers::waker link_waker_;
    double wake_by_s_ = 0;  // set by arm_sleep() for the sleep after it (one thread rests)
    inc::client client_;
    std::vector<segment> segments_;  // fixed table
    segment* running_ = nullptr;
    std::string failure_;
    bool dead_    = false;
    bool retired_ = false;
    // Set by poll() (the progress thread, perhaps) when the node's link closed; read by the
    // communicator to name the node in a failure another rank reported first.
    std::atomic<bool> node_gone_{false};
};

/// The halves a rank posts for one segment of a collective (1 or 2).
int inc_halves(schedule::collective coll, int rank, int root);

}  // namespace loom::comm
