// SPDX-License-Identifier: Apache-2.0
// loom-dpu's router: the poll loop that moves reliable-protocol frames between its ports.
//
// Per frame (cut-through: one frame at a time, never reassembled): the Ethernet type, the
// lengths and the reliable header's magic/version/kind are checked; the destination rank
// gives the destination node (rank / ranks_per_node); the node's route table
// (fabric/routing) gives the output port, and the dateline rule (out_vc) the VC written
// into the header's vc byte (the one byte the frame's checksum leaves out). A frame for a
// rank of this node goes to that rank's host port. Sources are checked against the port
// they arrive on: a host port injects only its own rank's frames; a torus port only frames
// its neighbour's route table sends this way, from another node. What fails is freed and
// counted by cause (stats.hh).
//
// Queues: one ring of mbuf pointers per (output port, VC). The mbuf received is the mbuf
// sent (no copy here; memif itself copies into its shared rings on both ends). Outputs
// are drained VC by VC in bursts of 32, round robin.
//
// Back-pressure, never a drop: when a frame's queue is full, its input port is held — the
// rest of that burst stays staged and nothing more is read from that port, so frames wait
// in the port's rx ring and then in the neighbour's queues. There are no credits between
// DPUs (yet): holding an input blocks both VCs behind its head frame, so the dateline's
// argument (VC1 never waits on VC0 around a ring) does not carry over to this scheme; it is
// deadlock-free only while queues are large enough for the traffic in flight, which the
// reliable protocol's windows bound (docs/tools/loom-dpu.md says more).
//
// Ports toward a peer that has not yet been heard from are not sent to (a memif server's
// frames before its client's first receive are lost): each port says hello (a control
// frame) every millisecond until it hears its peer.
#pragma once

#include <rte_mbuf.h>

#include <csignal>
#include <cstdint>
#include <functional>
#include <vector>

#include "options.hh"
#include "ports.hh"
#include "routing/route_table.hh"
#include "stats.hh"

namespace loom::dpu {

class router {
  public:
    router(const options& o, const topology::shape& s, std::vector<dpu_port>& ports);
    ~router();
    router(const router&)            = delete;
    router& operator=(const router&) = delete;

    /// Polls until *stop; prints the statistics to stderr whenever *dump is set (and clears it).
    void run(volatile std::sig_atomic_t* stop, volatile std::sig_atomic_t* dump);
    const std::vector<port_stats>& stats() const { return stats_; }
    /// Called once per loop iteration (loom-dpu --aggregate's nodes); true counts as work.
    void also_poll(std::function<bool()> f) { also_ = std::move(f); }

  private:
    struct queue {
        std::vector<rte_mbuf*> slots;
        uint32_t head = 0, tail = 0, mask = 0;
        uint32_t size() const { return tail - head; }
    };
    struct input {
        rte_mbuf* rx[32]{};
        uint16_t count = 0, pos = 0;
        bool held = false;  // its head frame waits for room (counted once per episode)
    };
    // Where one frame goes: an output port and VC, or a drop cause (out < 0).
    struct verdict {
        int out = -1, vc = 0, cause = 0;
    };

    verdict route(int in, rte_mbuf* m);
    bool poll_input(int in);
    bool drain_output(int out);
    void say_hello(uint64_t now);
    // The idle path's questions (run): frames staged or queued; every port's peer heard.
    bool holding() const;
    bool all_heard() const;

    options o_;
    topology::shape shape_;
    std::vector<dpu_port>& ports_;
    std::vector<port_stats> stats_;
    routing::route_table table_;
    // Per torus port: the neighbour's next hop per destination node (the source check).
    std::vector<std::vector<int32_t>> neighbour_next_;
    std::vector<queue> queues_;  // [port * max_vcs + vc]
    std::vector<input> inputs_;
    std::vector<bool> heard_;
    std::vector<int> rr_vc_;
    int nranks_ = 0, first_host_ = 0;
    uint64_t hello_every_ = 0, next_hello_ = 0;
    std::function<bool()> also_;
};

}  // namespace loom::dpu
