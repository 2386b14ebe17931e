// SPDX-License-Identifier: Apache-2.0
// The verbs driver: which device and port, the GID, message limits and queue depths.
#pragma once

#include "base/params.hh"

namespace loom::drivers::verbs::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"verbs"};

inline const loom::params::string_param device{
    component, "LOOM_VERBS_DEVICE", "",
    "RDMA device the verbs driver opens (a name ibv_devices lists, e.g. mlx5_0); unset: the first "
    "device with an active port; a name that is not there is an error listing those that are"};
inline const loom::params::int_param port{component, "LOOM_VERBS_PORT", "1", "",
                                          "port of the verbs device the queue pairs use"};
inline const loom::params::int_param gid_index{
    component, "LOOM_VERBS_GID_INDEX", "-1", "",
    "GID table index the verbs driver addresses peers by (RoCE needs one: see show_gids); -1: "
    "the LID on InfiniBand, GID index 0 on Ethernet (RoCE) ports"};
inline const loom::params::int_param eager_limit{
    component, "LOOM_VERBS_EAGER_LIMIT", "8192", "bytes",
    "largest verbs message sent into the peer's pre-posted receive buffers; larger ones wait for "
    "the receive's clear-to-send and land by one RDMA write with immediate; all ranks must agree"};
inline const loom::params::int_param recv_depth{
    component, "LOOM_VERBS_RECV_DEPTH", "128", "buffers",
    "receive buffers pre-posted per peer (each holds one eager message; an early arrival keeps "
    "its buffer until its receive is posted)"};
inline const loom::params::int_param send_queue{
    component, "LOOM_VERBS_SEND_QUEUE", "256", "messages",
    "verbs sends in flight per peer; one more is LOOM_ERR_NO_RESOURCE"};
inline const loom::params::int_param max_ops{
    component, "LOOM_VERBS_MAX_OPS", "16384", "operations",
    "verbs sends and receives posted and not yet completed per endpoint; one more is "
    "LOOM_ERR_NO_RESOURCE"};
inline const loom::params::int_param unexpected_bytes{
    component, "LOOM_VERBS_UNEXPECTED_BYTES", "268435456", "bytes",
    "memory verbs may hold for eager messages that arrive before their receive (copied out of the "
    "receive buffers); beyond, they wait in the buffers and then at the sender (back-pressure)"};
inline const loom::params::int_param mr_cache{
    component, "LOOM_VERBS_MR_CACHE", "256", "regions",
    "user buffers the verbs driver keeps registered for large messages (a buffer used again is not "
    "registered again); at least 1"};

}  // namespace loom::drivers::verbs::params
