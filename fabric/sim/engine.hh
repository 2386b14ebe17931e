// Internal to fabric/sim: the event loop's state. engine.cc runs it, report.cc turns the
// finished run into a sim::report (critical path, link and rank statistics).
//
// Events are (time, insertion order) in one binary heap, so equal times pop in the order
// they were scheduled and a run is deterministic. Steps that become ready at the current
// time go through a worklist; zero-cost local steps complete in the same pass.
#pragma once

#include <vector>

#include "links.hh"
#include "program.hh"
#include "sim.hh"

namespace loom::sim::detail {

enum class event_type : uint8_t { transfer_done, push_done, pull_done, local_done, slot_ready };

struct event {
    stamp at;
    uint64_t order;
    int32_t r1;   // transfer_done: the sender; push/pull/local: the rank; slot_ready: -1
    uint32_t i1;  // its step; slot_ready: the slot
    int32_t r2;   // transfer_done: the receiver
    uint32_t i2;
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
    /// Reserves the links of path_ from now_ for `bytes`; returns the finish stamp and sets
    /// *gated to the blocker record's index (or UINT32_MAX when no link held it back).
    stamp reserve(int64_t bytes, int owner_rank, uint32_t owner_step, uint32_t* gated);
    void schedule(const stamp& at, event_type type, int r1, uint32_t i1, int r2, uint32_t i2);
    void busy_begin(int r);
    void busy_end(int r);
    status check_finished();
    void set_gate(op& o, gate g) {
        o.flags =
            static_cast<uint8_t>((o.flags & ~gate_mask) | (static_cast<int>(g) << gate_shift));
    }
    static gate gate_of(const op& o) {
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
