// SPDX-License-Identifier: Apache-2.0
// loom-dpu's ports and how they are wired: one memif host port per rank of the node (the
// DPU listens, the rank connects) and one memif port per torus link toward a neighbour DPU
// (the lower node of the pair listens, the higher connects).
//
// Port numbers are the route table's (fabric/routing/dateline.hh port_of): 2·dim for +,
// 2·dim + 1 for −, only 2·dim on a dimension of size 2 (both ways are one link); host port
// i (rank node·ranks_per_node + i) comes after them at 2·ndims + i. A slot without a port
// (a dimension of size 1, a mesh's edge, the − of a size-2 dimension) has dev == nullptr.
//
// Order of opening, so that no memif client knocks before its server listens (a refused
// DPDK 22.11 memif client can bring down the EAL's interrupt thread): every server port
// first, then the ready file node-<n>.ready (with the pid, for --stats), then each client
// port once its server's ready file exists. A DPU waits only on lower nodes, which open
// their servers before they wait themselves, so no cycle can form.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "drivers/dpdk/dpdk_port.hh"
#include "options.hh"

namespace loom::dpu {

struct dpu_port {
    std::unique_ptr<drivers::dpdk::port> dev;
    uint16_t id   = 0;
    bool host     = false;
    int rank      = -1;  // host port: the rank behind it
    int dim       = -1;  // torus port: the dimension and step of the link
    int step      = 0;
    int neighbour = -1;  // torus port: the node at the other end
    bool server   = false;
    std::string label;  // "host rank 3", "dim 0 + to node 4"
};

/// Opens every port of `o.node` in the order above; writes the ready file.
result<std::vector<dpu_port>> open_ports(const options& o, const topology::shape& s);

}  // namespace loom::dpu
