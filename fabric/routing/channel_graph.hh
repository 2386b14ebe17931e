// SPDX-License-Identifier: Apache-2.0
// Deadlock check for a routing function: the channel dependency graph (Dally & Seitz).
//
// A chunk holding channel c while it waits for channel c' makes c depend on c'. Every
// route (one per ordered pair of distinct ranks) adds an edge between each two consecutive
// channels it takes; the routing cannot deadlock when that graph is acyclic. With the
// dateline VCs (dateline.hh) every lattice shape passes; without them a ring whose minimal
// arcs are two or more hops long in one direction fails, and the check returns one cycle
// as the list of channels, so the failure can be read rather than merely reported.
//
// Cost O(N²·diameter) (every route is walked), so it refuses shapes above
// max_dependency_work hops in all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "routing/dateline.hh"

namespace loom::routing {

struct dependency_report {
    bool acyclic         = true;
    int64_t channels     = 0;    // channels some route takes
    int64_t dependencies = 0;    // distinct edges between them
    std::vector<channel> cycle;  // when not acyclic: c0 → c1 → … → c0 (c0 not repeated)
};

/// Route hops the check walks at most (about a second of work).
constexpr int64_t max_dependency_work = int64_t{1} << 28;

/// Builds the graph from every route of `s` under `ties` and `vcs` and looks for a cycle.
result<dependency_report> check_channel_dependencies(const topology::shape& s, tie_rule ties,
                                                     vc_policy vcs);

/// "0(0) -> 1(1) vc0 => 1(1) -> 2(2) vc0 => … => back to 0(0) -> 1(1) vc0": a cycle as one
/// readable line, each channel a directed link with its VC.
std::string describe_cycle(const topology::shape& s, const std::vector<channel>& cycle);

}  // namespace loom::routing
