// SPDX-License-Identifier: Apache-2.0
// loom-dpu's counters, per port and per VC, and how they are printed: a readable table and
// one "dpu-link"/"dpu-drops" line per port that tests and loomrun parse. Plain counters
// the router bumps (one thread: no atomics); printed at exit and on SIGUSR1.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "ports.hh"

namespace loom::dpu {

constexpr int max_vcs = 2;

enum drop_cause : int {
    drop_bad_type,     // not EtherType 0x88B5 (nor the link's control frames)
    drop_runt,         // shorter than the Ethernet header
    drop_truncated,    // shorter than the reliable header, or its body length disagrees
    drop_too_long,     // chained (larger than a buffer)
    drop_bad_header,   // magic, version or kind wrong
    drop_unknown_dst,  // destination rank outside the job
    drop_forged,       // a source that may not arrive on that port
    drop_causes,
};
const char* drop_name(int cause);

struct port_stats {
    uint64_t frames_in = 0, bytes_in = 0, control_in = 0;
    uint64_t drops[drop_causes]{};
    uint64_t frames_out[max_vcs]{}, bytes_out[max_vcs]{};
    uint64_t high_water[max_vcs]{};  // most frames its (port, VC) queue held
    uint64_t held = 0;  // times its input was held (an output queue was full), per episode
};

/// Prints the table and the per-port lines of `node`.
void print_stats(std::FILE* out, int node, const std::vector<dpu_port>& ports,
                 const std::vector<port_stats>& stats);

}  // namespace loom::dpu
