// SPDX-License-Identifier: Apache-2.0
// The rank-side cases of the multi-process C API sweep: each runs one call (and its
// in-place twin) through the C API and checks the result against reference.hh. Run by every
// rank of a launch in the same order; failures are recorded in the rank_context.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <string>

#include "comm/comm.hh"
#include "proc_launch.hh"

namespace loom::test::api {

/// One call of the sweep.
struct sweep_case {
    comm::call_kind kind = comm::call_kind::allreduce;
    std::string algorithm;  // "" : the default rule
    size_t count       = 0;
    loom_dtype_t dtype = LOOM_INT32;
    loom_op_t op       = LOOM_SUM;
    int root           = 0;
    int segments       = 0;
    int channels       = 0;
    uint64_t seed      = 1;

    std::string describe() const;
};

/// Runs `c` out of place and in place, checking both against the reference and each other.
void run_case(rank_context& ctx, const sweep_case& c);

/// Point-to-point: every rank sends to its right neighbour and receives from its left
/// (non-blocking, several messages per pair in order), for each count.
void run_p2p(rank_context& ctx, uint64_t seed);

/// Five different collectives started non-blocking at once, completed in another order.
void run_concurrent(rank_context& ctx, uint64_t seed);

/// `iterations` back-to-back blocking allreduces of one int64, each checked.
void run_back_to_back(rank_context& ctx, int iterations);

/// Split by parity with reversed keys; a collective on each child checks membership.
void run_split(rank_context& ctx);

}  // namespace loom::test::api
