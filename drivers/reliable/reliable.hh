// SPDX-License-Identifier: Apache-2.0
// The reliable tagged endpoint over unreliable frames (docs/drivers/reliable.md): driver.hh's
// semantics built on frame_links (drivers/common/frame_link.hh), so a DPDK port, a datagram
// endpoint or anything else that carries bounded frames carries loom's collectives. The
// protocol is end to end between ranks: a sliding window per peer with cumulative and
// selective acknowledgements, retransmission from one timer wheel per endpoint, segmentation
// to the link's MTU, eager messages up to a limit and a rendezvous above it, a job key and an
// incarnation on every frame, peer failure by silence, goodbye or a dead link.
//
// This header is what a transport's driver calls (drivers/dpdk): open_reliable() with the
// links it set up. The files beside it each do one job: reliable_wire.hh (the header layout),
// reliable_wheel (timers), reliable_window (acks and holes), reliable_key (the job key),
// reliable_endpoint/_tx/_rx (posting, sending, receiving), datagram_link (frames over
// datagram endpoints).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hh"
#include "drivers/common/frame_link.hh"
#include "drivers/driver.hh"

namespace loom::drivers::reliable {

struct options {
    size_t window         = 128;    // frames in flight per peer (LOOM_REL_WINDOW)
    size_t eager_limit    = 16384;  // bytes sent without a rendezvous (LOOM_REL_EAGER_LIMIT)
    size_t early_buffers  = 512;    // eager early-arrival buffers (LOOM_REL_EARLY_BUFFERS)
    size_t max_ops        = 16384;  // posted operations (LOOM_REL_MAX_OPS)
    double rto_s          = 0.004;  // first retransmission timeout (LOOM_REL_RTO_US)
    uint32_t ack_every    = 16;     // ack after this many frames within a pass
    double peer_timeout_s = 5;      // silence that fails a busy peer (LOOM_REL_PEER_TIMEOUT)
    double linger_s       = 0.5;    // close() waits this long for the last acks
    /// The name in capabilities() and in log lines ("dpdk", "reliable").
    std::string name = "reliable";
    /// The job's secret (LOOM_JOB_SECRET's hex, where the caller has it): mixed into the job
    /// key beside the salt rank 0 publishes in the store.
    std::string secret;
    /// Behind a router that addresses ranks of the world (drivers/dpdk's dpu): the driver a
    /// split child communicator opens instead (caps::forwards and caps::direct); "" for none.
    std::string direct;
};

/// The LOOM_REL_* parameters; an invalid value is an invalid-argument error naming it.
result<options> options_from_params();

/// Opens a reliable endpoint of config.rank over `links`: peer p's frames go over
/// links[link_of_peer[p]] (one link per peer for a full mesh of cables, or one link every
/// peer shares behind a router). link_of_peer has config.size entries; the own rank's entry
/// is ignored (a rank talks to itself through the loopback). connect() says hello to every
/// peer within config.timeout_s.
result<std::unique_ptr<endpoint>> open_reliable(
    const endpoint_config& config, std::vector<std::unique_ptr<common::frame_link>> links,
    std::vector<int> link_of_peer, const options& opts);

/// What an endpoint counted: frames dropped by each check, retransmissions, acks.
struct reliable_stats {
    uint64_t frames_sent = 0, frames_received = 0;
    uint64_t data_frames_sent  = 0;
    uint64_t retransmits       = 0;  // on a timer
    uint64_t fast_retransmits  = 0;  // on a SACK hole
    uint64_t probes            = 0;  // tail-loss probes (the newest frame, resent early)
    uint64_t acks_sent         = 0;  // ack-only frames
    uint64_t duplicates        = 0;  // frames already processed or held
    uint64_t out_of_window     = 0;  // beyond the receive window
    uint64_t held_out_of_order = 0;  // frames kept until the gap before them filled
    uint64_t bad_key           = 0;  // another job's key
    uint64_t bad_checksum      = 0;
    uint64_t truncated         = 0;  // shorter than the header, or than it says
    uint64_t bad_header        = 0;  // wrong magic, version or kind
    uint64_t unknown_rank      = 0;  // a source that is no peer on that link, or not for us
    uint64_t stale             = 0;  // an incarnation that is not the peer's current one
    uint64_t link_full         = 0;  // link send() refused a frame (retried later)
    uint64_t stalls            = 0;  // in-order frames that waited for an early buffer
};

/// The counters of a reliable endpoint, or null when `ep` is not one.
const reliable_stats* stats_of(const endpoint& ep);

}  // namespace loom::drivers::reliable
