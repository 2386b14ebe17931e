// SPDX-License-Identifier: Apache-2.0
// The endpoint side of in-network aggregation, transport-free like the aggregator: the
// caller feeds it the packets that arrive and a clock, and gives it a sink toward the
// aggregation node.
//
// One collective at a time (start() … done()). The vector is cut into chunks of at most
// chunk_elements; chunk k goes through slot k mod window, and the slot takes chunk
// k + window only once the result of chunk k is in (each slot on its own: a slow chunk
// holds up only its slot) (that is what lets the aggregator keep
// just two entries per slot, aggregator.hh). So at most `window` contributions are
// outstanding, and any message size streams through a fixed window.
//
// Loss. A contribution whose result has not come back after the retransmission timeout is
// sent again (flag_resend), the timeout doubling up to max_rto_s; the first timeout is
// max(rto_s, 4 × the smoothed round trip of chunks that were not resent: TCP's rule without
// the variance term), so a busy node is not flooded with copies; the aggregator answers a
// repeated contribution with the result if it already has it. A result is copied into the
// output exactly once (a chunk bitmap), whatever duplicates arrive; results of other
// collectives, slots or offsets are ignored and counted. Past the collective's deadline
// poll() returns LOOM_ERR_TIMEOUT naming the chunk and slot still missing.
//
// A broken group. When a member of the communicator is gone (its link to a node closed
// without leaving, a node of the tree died), the node nacks the members still there, naming
// who is gone; the nack fails the running collective at once (poll() returns it) and every
// later start(): the group cannot complete another entry, and a deadline would only say so
// later and name nobody.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.hh"
#include "drivers/datagram.hh"
#include "inc/protocol/packet.hh"

namespace loom::inc {

/// Where a client's packets go (the aggregation node): any datagram sink.
using uplink = drivers::datagram_sink;
static_assert(header_bytes + max_payload_bytes <= drivers::datagram_max_frame,
              "a packet fits one datagram frame");

struct client_config {
    uint64_t job = 0, comm = 0;
    uint32_t rank = 0, members = 1;
    uint32_t window         = 8;  // slots admitted for this communicator
    uint32_t chunk_elements = 0;  // ≤ max_payload_bytes / element size; 0: as many as fit
    bool deterministic      = false;
    double rto_s            = 200e-6;  // first retransmission timeout
    double max_rto_s        = 20e-3;
    double deadline_s       = 10;  // whole collective
};

struct client_stats {
    uint64_t sent          = 0;  // contributions, first time
    uint64_t retransmitted = 0;
    uint64_t results       = 0;  // results copied in
    uint64_t duplicates    = 0;  // results for chunks already in
    uint64_t foreign       = 0;  // results of another collective, slot or offset
    uint64_t nacks         = 0;  // the node's nacks of this group (the first breaks it)
};

/// What one collective asks of the node besides its data.
struct collective_shape {
    uint16_t flags = 0;  // 0: all-reduce; flag_to_root: reduce; flag_from_root: broadcast
    uint16_t root  = 0;
    uint64_t first = 0;  // the element offset of in/out in the call's vector (a segment)
};

class client {
  public:
    explicit client(const client_config& c);

    /// Begins collective `seq`: count elements of dtype from `in`, reduced by op into `out`
    /// (may equal `in`). A broadcast's non-root passes in = null (it sends no data), a
    /// reduce's non-root out = null (it gets notices, not data). invalid_argument for a
    /// dtype/op the protocol does not carry, a missing buffer, or a collective still running.
    status start(uint32_t seq, loom_dtype_t dtype, loom_op_t op, const void* in, void* out,
                 size_t count, double now_s, const collective_shape& shape = {});
    /// Sends what the window allows and retransmits what timed out. ok while running or
    /// done; LOOM_ERR_TIMEOUT past the deadline; the node's reason once it broke the group.
    status poll(double now_s, uplink& up);
    /// A packet from the aggregation node (already parsed): a result, or a nack that
    /// breaks the group (above).
    void on_packet(const header& h, const uint8_t* payload, double now_s, uplink& up);
    bool done() const { return running_ && delivered_ == chunks_; }
    bool running() const { return running_ && delivered_ != chunks_; }
    /// Gives up the collective (its call failed): its buffers are not touched again.
    void abandon() { running_ = false; }
    /// The node's nack, once one came (ok before).
    const status& broken() const { return broken_; }
    /// When poll() next has timed work (a retransmission falls due, or the deadline); +inf
    /// when nothing runs. A caller that sleeps between packets wakes by then.
    double next_timer_s() const;

    const client_stats& stats() const { return stats_; }

  private:
    struct slot_state {
        bool busy      = false;
        uint64_t chunk = 0;  // the chunk in flight through this slot
        uint64_t next  = 0;  // the slot's next chunk: slot, slot + window, …
        double sent_at = 0;
        double rto     = 0;
        bool resent    = false;  // no round-trip sample from a retransmitted chunk (Karn)
    };
    void dispatch(uint32_t slot, double now_s, uplink& up);
    void send_chunk(uint32_t slot, bool resend, double now_s, uplink& up);

    client_config cfg_;
    client_stats stats_;
    bool running_       = false;
    uint32_t seq_       = 0;
    loom_dtype_t dtype_ = LOOM_FLOAT32;
    loom_op_t op_       = LOOM_SUM;
    collective_shape shape_;
    bool sends_data_ = true, gets_data_ = true;
    const uint8_t* in_ = nullptr;
    uint8_t* out_      = nullptr;
    size_t count_ = 0, esize_ = 0;
    uint64_t chunk_  = 0;  // elements per chunk of this collective
    uint64_t chunks_ = 0, delivered_ = 0;
    double deadline_ = 0;
    double srtt_s_   = 0;  // smoothed round trip, 0 until the first sample
    std::vector<slot_state> slots_;
    std::vector<uint64_t> have_;  // chunk bitmap
    std::vector<uint8_t> packet_;
    status broken_;
};

}  // namespace loom::inc
