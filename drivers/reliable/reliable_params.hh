// SPDX-License-Identifier: Apache-2.0
// The reliable protocol over frames (drivers/reliable): window, timers, eager limit, pools and
// failure detection. Read once when an endpoint opens (options_from_params), never per frame.
#pragma once

#include "base/params.hh"

namespace loom::drivers::reliable::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"reliable"};

inline const loom::params::int_param window{
    component, "LOOM_REL_WINDOW", "128", "frames",
    "frames in flight per peer before the sender waits for acknowledgements; the receiver holds "
    "as many out-of-order frames per peer (memory: window x link MTU per peer on each side)"};
inline const loom::params::int_param eager_limit{
    component, "LOOM_REL_EAGER_LIMIT", "16384", "bytes",
    "largest message sent at once; larger ones send a request-to-send and their data only once "
    "the receive is posted (rendezvous); all ranks must agree"};
inline const loom::params::int_param early_buffers{
    component, "LOOM_REL_EARLY_BUFFERS", "512", "buffers",
    "buffers of LOOM_REL_EAGER_LIMIT bytes for eager messages that arrive before their receive; "
    "when all are taken the peer's stream pauses (its frames are retransmitted later)"};
inline const loom::params::int_param max_ops{
    component, "LOOM_REL_MAX_OPS", "16384", "operations",
    "sends and receives posted and not yet completed per endpoint; one more is "
    "LOOM_ERR_NO_RESOURCE"};
inline const loom::params::int_param rto_us{
    component, "LOOM_REL_RTO_US", "4000", "us",
    "smallest and first retransmission timeout of a frame; above it the timeout follows each "
    "peer's "
    "measured round trip (smoothed, plus four deviations, at most 1 s) and doubles on every retry"};
inline const loom::params::int_param ack_every{
    component, "LOOM_REL_ACK_EVERY", "16", "frames",
    "an acknowledgement goes out after this many frames received from a peer even inside a poll "
    "pass (otherwise once at the end of the pass, or piggybacked on data)"};
inline const loom::params::real_param peer_timeout{
    component, "LOOM_REL_PEER_TIMEOUT", "5", "s",
    "a peer that sends nothing for this long while operations toward it are outstanding is "
    "failed (its operations complete with LOOM_ERR_PEER_FAILURE); idle peers are probed first"};
inline const loom::params::real_param linger{
    component, "LOOM_REL_LINGER", "0.5", "s",
    "how long close() keeps answering and retransmitting so that its frames are acknowledged, "
    "then says goodbye (carrying its last acks) until every peer answers"};

}  // namespace loom::drivers::reliable::params
