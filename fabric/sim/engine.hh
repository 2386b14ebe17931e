// SPDX-License-Identifier: Apache-2.0
// Internal to fabric/sim: the event loop's state. engine.cc runs it, report.cc turns the
// finished run into a sim::report (critical path, link and rank statistics).
//
// Events are (time, insertion order) in one binary heap, so equal times pop in the order
// they were scheduled and a run is deterministic. Steps that become ready at the current
// time go through a worklist; zero-cost local steps complete in the same pass. A transfer's
// head reaching a link later than now is an event too (hop_arrive, its state a pooled
// flight), so each link serves heads in the order they reach it.
#pragma once

#include <vector>

#include "links.hh"
#include "program.hh"
#include "sim.hh"

namespace loom::sim::detail {

enum class event_type : uint8_t {
    transfer_done,
    push_done,
    pull_done,
    local_done,
    slot_ready,
    hop_arrive,  // a transfer's head reaches the next link of its path
};

struct event {
    stamp at;
    uint64_t order;
    int32_t r1;   // transfer_done: the sender; push/pull/local: the rank; slot_ready, hop: -1
    uint32_t i1;  // its step; slot_ready: the slot; hop_arrive: the flight
    int32_t r2;   // transfer_done: the receiver
    uint32_t i2;  // its step; push_done: the slot
    event_type type;
};

struct pending_transfer {  // one side of a rendezvous, waiting for the other
    int32_t rank;
    uint32_t step;
};

struct blocker {  // the transfer that held a link another one had to wait for
    int32_t rank;
    uint32_t step;
    uint32_t link;
    // What had held that transfer back before it took the link: its last wait (a blocker
    // record) or UINT32_MAX, none (then what started it). The critical path goes on from
    // there, not from the blocker's own last wait, which may lie further along its path.
    uint32_t prev;
};

// A transfer whose head is still on its way (a path of more than one hop). Pooled: a
// finished flight's record goes on a free list; its hops live in engine::flight_hops_ at
// index · link_table::max_hops().
struct flight {
    stamp head;           // when its head reaches hop `next` (parts included)
    double busy     = 0;  // B over the slowest link crossed so far
    int64_t bytes   = 0;
    int32_t a       = -1;  // the sender (the owner of the links it holds); inc: the rank
    uint32_t si     = 0;
    int32_t b       = -1;  // the receiver; -1 for inc_push / inc_pull
    uint32_t ri     = 0;
    uint32_t next   = 0;           // the hop its head reaches next; free list: the next free record
    uint32_t wait   = UINT32_MAX;  // its last wait so far (a blocker record)
    uint32_t nhops  = 0;
    event_type done = event_type::transfer_done;
};

struct slot {  // an in-network aggregation (all inc_push steps with one tag)
    int expected = 0;
    int pushed   = 0;
    bool ready   = false;
    stamp last;  // when the last push arrived
    int32_t last_rank  = -1;
    uint32_t last_step = 0;
    std::vector<pending_transfer> pulls;  // waiting for the result
};

struct rank_state {
    int active    = 0;  // transfers or γ steps in progress
    double since  = 0;
    double busy_s = 0;
    uint32_t done = 0;
};

class engine {
  public:
    engine(const fabric& f, const schedule::schedule_info& info, const options& o);
    status init();
    /// Compiles rank rs.rank's steps (each rank once, any order).
    status add_rank(const schedule::rank_schedule& rs);
    status run();
    report make_report();  // report.cc

  private:
    void drain();
    void on_ready(int r, uint32_t i, uint32_t pred);
    void finish_op(int r, uint32_t i);
    void rendezvous(int r, uint32_t i);
    void start_transfer(int a, uint32_t si, int b, uint32_t ri, bool send_was_later);
    void start_inc(int r, uint32_t i, bool push, gate why);
    /// Sends `bytes` along path_ from now_: owner (a, si), partner (b, ri; b = -1 for an
    /// inc step); schedules `done` when the last byte arrives. Each link is served at its
    /// head's arrival (serve_hop), in arrival order.
    void launch(int64_t bytes, int a, uint32_t si, int b, uint32_t ri, event_type done);
    /// The head of flight f has reached its next hop h at f.head (= now_): waits for the
    /// link, holds it, moves on; after the last hop schedules the done event and returns
    /// true.
    bool serve_hop(flight& f, const hop& h);
    /// Serves flight `id`'s next hop(s); schedules its next arrival or frees the record.
    void next_hop(uint32_t id);
    /// A hop_arrive event is due at now_ (scheduled earlier, so served first).
    bool hop_due_now() const;
    /// Marks the transfer's step(s) as gated by a link: the blocker record `gated`.
    void gate_link(int a, uint32_t si, int b, uint32_t ri, uint32_t gated);
    void schedule(const stamp& at, event_type type, int r1, uint32_t i1, int r2, uint32_t i2);
    void busy_begin(int r);
    void busy_end(int r);
    status check_finished();
    void set_gate(op& o, gate g) {
        o.flags =
            static_cast<uint8_t>((o.flags & ~gate_mask) | (static_cast<int>(g) << gate_shift));
    }
    /// What held it back last: a link (op_link), else what started it.
    static gate gate_of(const op& o) { return (o.flags & op_link) ? gate::link : start_gate_of(o); }
    static gate start_gate_of(const op& o) {
        return static_cast<gate>((o.flags & gate_mask) >> gate_shift);
    }
    slot* slot_of(uint32_t tag);
    void walk_critical_path(report& out);  // report.cc

    fabric f_;
    schedule::schedule_info info_;
    options o_;
    arena mem_;  // before progs_: the ops outlive nothing that points at them
    std::vector<rank_program> progs_;
    std::vector<uint8_t> added_;
    link_table links_;
    std::vector<hop> path_;
    std::vector<flight> flights_;
    std::vector<hop> flight_hops_;  // flights_.size() · max_hops_
    uint32_t free_flight_ = UINT32_MAX;
    uint32_t max_hops_    = 1;
    int64_t hop_events_   = 0;  // hop_arrive events in the heap
    std::vector<event> heap_;
    uint64_t order_ = 0;
    struct ready_item {
        int32_t rank;
        uint32_t step;
        uint32_t pred;
    };
    std::vector<ready_item> work_;
    open_table<key128, pending_transfer> pending_;
    std::vector<slot> slots_;
    open_table<uint64_t, uint32_t> slot_index_;
    std::vector<blocker> blockers_;
    std::vector<rank_state> ranks_;
    compile_scratch scratch_;
    stamp now_;
    stamp last_;
    int32_t last_rank_  = -1;
    uint32_t last_step_ = 0;
    int64_t steps_ = 0, transfers_ = 0, events_ = 0;
    status state_;  // ok until a schedule error stops the run
};

}  // namespace loom::sim::detail
