// SPDX-License-Identifier: Apache-2.0
// Communicators and the C API: transport, deadlines, progress, algorithms, limits.
#pragma once

#include "base/params.hh"

namespace loom::comm::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"comm"};

inline const loom::params::string_param transport{
    component, "LOOM_TRANSPORT", "",
    "driver of a new communicator: shm, tcp, ofi, self, fault:<driver> or fwd:<driver> (routes "
    "over LOOM_FABRIC; needs LOOM_PROGRESS=thread); unset: self for one rank, shm when all ranks "
    "share a host, else the first network transport every rank can run (ofi where built and "
    "LOOM_OFI_PROVIDER names a network provider or libfabric offers cxi, efa, verbs or psm, else "
    "tcp), said at info level (loom_config_t.transport overrides)"};
inline const loom::params::string_param link_stats_dir{
    component, "LOOM_LINK_STATS_DIR", "",
    "directory where the world communicator of a fwd:<driver> transport writes its link counters "
    "at loom_comm_destroy, as rank-<r>.txt (set by loomrun --link-stats)"};
inline const loom::params::real_param timeout{
    component, "LOOM_TIMEOUT", "60", "s",
    "default deadline of every call on a communicator (loom_config_t.timeout_s and the per-call "
    "attribute override it)"};
inline const loom::params::choice_param progress{
    component, "LOOM_PROGRESS", "caller", "caller|thread",
    "who advances calls: the caller inside loom_test/wait/progress, or a progress thread per "
    "communicator"};
inline const loom::params::string_param algo{
    component, "LOOM_ALGO", "",
    "algorithm per primitive, prim=name(;prim=name)*, e.g. "
    "allreduce=rabenseifner;alltoall=pairwise; an unknown or inapplicable name is an error listing "
    "the allowed ones; unset: the tuner chooses by predicted cost"};
inline const loom::params::int_param explain{
    component, "LOOM_EXPLAIN", "0", "",
    "1: rank 0 prints every new algorithm choice with the candidates, their predicted times and "
    "why the others were excluded (as loom_comm_explain)"};
inline const loom::params::string_param topology{
    component, "LOOM_TOPOLOGY", "",
    "the logical fabric shape the algorithms see (star:N, ring:N, torus:AxB, mesh:AxB); unset: "
    "LOOM_FABRIC, else star:<size>; torus:2x2x2 enables dims and dor-relay"};
inline const loom::params::int_param max_inflight{
    component, "LOOM_MAX_INFLIGHT", "16", "calls",
    "calls in flight at once on one communicator (1..4096); one more is LOOM_ERR_NO_RESOURCE"};
inline const loom::params::int_param plan_cache{
    component, "LOOM_PLAN_CACHE", "64", "plans",
    "compiled schedules a communicator keeps (by primitive, algorithm, count, dtype, op, root, "
    "segments, channels); when full it starts afresh"};

inline const loom::params::int_param flat{
    component, "LOOM_FLAT", "1", "",
    "1: a communicator whose ranks share one node over shm sets up the flat segment for small "
    "all-reduce, reduce, broadcast, all-gather and all-to-all (the `flat` algorithm, "
    "docs/algorithms.md#flat); 0: not"};
inline const loom::params::int_param flat_max_bytes{
    component, "LOOM_FLAT_MAX_BYTES", "16384", "bytes",
    "largest part of a call one rank writes that the flat algorithm serves (the vector; "
    "all-gather: its block; all-to-all: its N blocks, each rounded up to 4 bytes); the segment "
    "holds 4 x ranks x this (8..1048576); above it the tuner ranks the other algorithms only"};

}  // namespace loom::comm::params
