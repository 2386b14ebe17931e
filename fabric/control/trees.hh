// SPDX-License-Identifier: Apache-2.0
// Aggregation trees: which in-network nodes (switches, DPUs) reduce for which ranks, and who
// is whose parent, computed by the controller from the fabric and from which nodes are out
// of service (their member is down or drained).
//
// The fabric file states a tree (`parent` on each in-network node; a rank hangs off the
// in-network nodes it is wired to). With every node in service that tree is the answer.
// When nodes are out:
//  - a node whose parent is out takes, in its place, another in-service in-network node it
//    is wired to that sits nearer the root than it does (a lower declared level, so no
//    cycle can form), preferring the lowest level, then file order; with none it becomes
//    the root of a tree of its own;
//  - a rank whose in-network nodes are all out has no in-network path: it is listed as cut,
//    with the node that cut it, and its jobs fall back to software all together;
//  - an out node is in no tree.
// One fabric may therefore give several trees; a job's ranks can use the in-network path
// only when one tree holds them all (tree_for_ranks).
//
// Pure logic over fabric/topology: no transport, no clock. O(nodes + links) per call.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "topology/fabric.hh"

namespace loom::control {

/// The fabric nodes out of service, by node id, each with why ("down", "drained").
using out_of_service = std::map<std::string, std::string>;

struct tree_node {
    std::string id;
    std::string parent;  // "" at the root
    int level = 0;       // hops from the root
    std::vector<std::string> children;
    std::vector<int> ranks;  // ranks that hang off this node directly
};

struct aggregation_tree {
    std::string root;
    std::vector<tree_node> nodes;  // the root first, then level by level, file order within
    std::vector<int> ranks;        // every rank the tree reduces for, ascending
    bool as_declared = true;       // false when a node took another parent or became root
};

struct cut_rank {
    int rank = -1;
    std::string because;  // "leaf0 is down", the first out node the rank hangs off
};

struct tree_plan {
    std::vector<aggregation_tree> trees;  // in order of their roots in the file
    std::vector<cut_rank> cut;            // ranks with no in-network path, ascending
    int in_network_nodes = 0;             // in the fabric, in service or not
};

/// The trees of `f` without the nodes in `out` (ids the fabric does not have are ignored).
tree_plan plan_trees(const topology::fabric& f, const out_of_service& out);

/// The tree that holds every rank of `ranks`, or null with `*why` saying what stands in the
/// way (a cut rank and its node, ranks split across trees, no in-network node at all).
const aggregation_tree* tree_for_ranks(const tree_plan& plan, const std::vector<int>& ranks,
                                       std::string* why);

}  // namespace loom::control
