// SPDX-License-Identifier: Apache-2.0
// loom-dpu --aggregate: the DPU as an in-network aggregation node (SHARP-style), run on the
// router's own poll loop (router::also_poll; no second thread).
//
// Two-level tree: every DPU hosts a leaf node (inc/node/switch_node.hh) that its node's
// ranks join, listening on dpdk:memif:NAME-a<node>; node 0 also hosts the root node
// (dpdk:memif:NAME-root) that every leaf, node 0's own included, joins as a child. A leaf
// sums its ranks' contributions and forwards the partial sum to the root; the root sums the
// partials and its result goes back down through the leaves to the ranks. NAME is the last
// part of --dir (the job's 0700 directory), so two jobs never share a socket.
//
// The tree's links are memif pairs of their own (a leaf connects to the root as a datagram
// client: node 0's names id 0, the others are handed one by the root), not frames carried
// over the torus ports: carrying inc packets through the router is later work.
//
// Order (no memif client knocks before its server listens): node 0 opens the root, then its
// leaf, whose parent link to the root is in the same process (no challenge is awaited in
// open(): the two are polled together until it arrives), all before the router's ports and
// ready file; node n > 0 waits for node 0's ready file, then opens its leaf and joins the
// root, then its ports. So when loomrun has every ready file, every leaf listens and is
// linked to the root.
#pragma once

#include <cstdio>
#include <memory>

#include "inc/node/switch_node.hh"
#include "options.hh"

namespace loom::dpu {

class aggregation {
  public:
    /// Opens this node's instances (above); node n > 0 waits for node 0 first.
    static result<std::unique_ptr<aggregation>> open(const options& o, int nodes);
    /// One pass over both instances; true if anything arrived (the router counts it as
    /// activity, so its idle policy does not back off while aggregation runs).
    bool poll();
    /// One "dpu-agg" key=value line per instance.
    void print(std::FILE* out) const;

  private:
    explicit aggregation(int node) : node_(node) {}
    int node_;
    std::unique_ptr<inc::switch_node> root_, leaf_;
};

}  // namespace loom::dpu
