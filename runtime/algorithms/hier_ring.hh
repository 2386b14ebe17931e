// SPDX-License-Identifier: Apache-2.0
// The hierarchical (2-D) ring all-reduce against the flat ring on a cluster of K groups of G
// ranks with two link classes (Ring-Tree, "Hierarchical Algorithms" and its exercise;
// docs/references.md#hierarchical-ring): the crossover the text computes, where one closed
// form stops beating the other. The algorithm itself is `hier-ring` in hier_ring.cc.
#pragma once

namespace loom::algorithms {

/// Links inside a group (NVLink in the text) and between groups (the network).
struct two_level_links {
    double alpha_intra_s        = 0;
    double bw_intra_bytes_per_s = 1;
    double alpha_inter_s        = 0;
    double bw_inter_bytes_per_s = 1;
    /// True: the G rings of the inter-group phase share one network port per group, so that
    /// phase's BW term is G times the text's (docs/references.md#hierarchical-ring).
    bool shared_port = false;
};

/// Flat ring over all K·G ranks, every step bottlenecked by an inter-group link:
/// 2(N-1)α_inter + 2(N-1)/N·M/BW_inter.
double flat_ring_time_s(int groups, int group_size, double bytes, const two_level_links& l);

/// Intra-group reduce-scatter, inter-group ring all-reduce of each rank's M/G shard,
/// intra-group all-gather: 2(G-1)α_intra + 2(G-1)/G·M/BW_intra + 2(K-1)α_inter +
/// 2(K-1)/K·(M/G)/BW_inter (times G with a shared port).
double hier_ring_time_s(int groups, int group_size, double bytes, const two_level_links& l);

/// The M at which the two are equal: the hierarchical ring is faster below it. +infinity when
/// it is never slower (its BW term is not above the flat ring's, as in the text's example with
/// a network port per rank), 0 when it is never faster.
double hier_ring_crossover_bytes(int groups, int group_size, const two_level_links& l);

}  // namespace loom::algorithms
