// SPDX-License-Identifier: Apache-2.0
// loom-dpu options: the flags and their checks (one clear message per bad value). Kept apart
// from the router so the command line can be read without DPDK.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "base/status.hh"
#include "tools/common/dpu_agg_address.hh"
#include "topology/topology.hh"

namespace loom::dpu {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // the ports or the router failed
constexpr int exit_bad_args = 2;

struct options {
    int node = -1;                  // this DPU's node (a rank of --fabric's shape)
    std::string fabric;             // torus:AxBxC, ring:N, mesh:AxB: the DPUs' wiring
    std::string dir;                // the memif sockets and ready files of the job
    int ranks_per_node = 1;         // node of rank r: r / ranks_per_node
    std::string secret_file;        // memif secret (first line, at most 24 characters)
    std::string secret;             // read from secret_file by check_options
    bool busy_poll        = false;  // spin always (a real DPU's cores do nothing else)
    double link_timeout_s = 30;     // how long a neighbour's server may take to listen
    int queue_slots       = 256;    // frames per (output port, VC) queue
    bool stats_query      = false;  // --stats: ask the running DPU of --node to dump (SIGUSR1)
    // In-network aggregation (aggregate.hh): a leaf node for this node's ranks, and on node 0
    // the root too, both on the router's poll loop.
    bool aggregate = false;
    std::string key_file;      // the node key (inc/node/key_file.hh), 0600
    uint32_t slots = 1024;     // aggregation slots of each node instance
    double drop = 0, dup = 0;  // loss injected on received data packets (as loom-switch)
    uint64_t seed = 1;
    int agg_ids   = 4;  // memif interface ids the leaf offers its ranks
};

/// Declares every flag on `app`, bound to `o`.
void add_options(CLI::App& app, options& o);
/// Checks what CLI11 cannot and reads the secret file.
result<topology::shape> check_options(options& o);

/// The files of a job's DPUs in `dir` (loomrun and the ranks derive the same names).
std::string host_socket(const std::string& dir, int rank);
std::string link_socket(const std::string& dir, int low_node, int high_node, int dim);
std::string ready_file(const std::string& dir, int node);  // servers listen; holds the pid

}  // namespace loom::dpu
