// SPDX-License-Identifier: Apache-2.0
// Dimension-ordered routing (DOR) on the fabric shapes of fabric/topology.
//
// The rule. A chunk from src to dst first travels along dimension 0 until its coordinate
// there equals dst's, then along dimension 1, and so on (dimension 0 is the slowest-varying
// coordinate of topology.hh's row-major order). Along one dimension of size n it takes the
// shortest arc: on a torus or ring the wraparound counts, on a mesh there is none (the
// straight line). On star and full mesh every pair is one hop apart: the route is direct.
//
// Ties. On an even-sized wrapping dimension the antipode (distance n/2) is equally far
// both ways. docs/references.md#dor-ties: which way it goes changes the link load:
//   toward_plus    always + (Lu-CA §7.1's "ties broken rightward");
//   source_parity  + if the source coordinate on that axis is even, − if odd (the rule
//                  that reproduces Lu-TM §3.6's 4×4 count of 8 chunks on every link).
// The source coordinate on axis i is still the chunk's coordinate when it starts moving
// along axis i (axes before it do not change it), and once a chunk is one step into an arc
// the rest of the arc is strictly shorter than n/2. So the route is memoryless: next_hop()
// needs only the current rank and the destination. On a dimension of size 2 both ways
// lead to the same neighbour over the same link.
//
// Routes are shortest paths: their length is topology::shape::hops().
// Depends on fabric/topology only (docs/architecture.md#layout). Virtual channels (dateline.hh),
// the deadlock check (channel_graph.hh) and per-router tables (route_table.hh) build on it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "topology/topology.hh"

namespace loom::routing {

/// Antipodal tie rule on an even wrapping dimension (docs/references.md#dor-ties).
enum class tie_rule { toward_plus, source_parity };
std::string_view tie_rule_name(tie_rule t);  // "toward-plus", "source-parity"
/// The rule named by tie_rule_name(); false for any other text.
bool parse_tie_rule(std::string_view text, tie_rule* out);

/// The way from coordinate `from` to `to` along one dimension of size n: step +1/-1 (0 when
/// equal) and its length in hops.
struct arc {
    int step   = 0;
    int length = 0;
};
arc axis_arc(int n, bool wraps, int from, int to, tie_rule ties);

/// The ranks visited from src to dst, both included ({src} when src == dst).
std::vector<int> route(const topology::shape& s, int src, int dst, tie_rule ties);

/// The rank after `at` on the way to dst; -1 when at == dst.
int next_hop(const topology::shape& s, int at, int dst, tie_rule ties);

/// A chunk src → dst (src != dst) whose route passes through the rank asked about.
struct transit {
    int src;
    int dst;
    int length;  // hops of the whole route
    int hop;     // hops already taken on arrival (0 at the source)
    int prev;    // rank it came from; -1 at the source
    int next;    // rank it goes to; -1 at the destination
};

/// Every chunk of an all-to-all (one per ordered pair of distinct ranks) that starts at,
/// passes through or ends at `at`, in no particular order. Costs O(chunks listed + N·d_max)
/// rather than O(N²·diam): for each source only the destinations whose route can reach
/// `at` are visited.
std::vector<transit> transits_through(const topology::shape& s, int at, tie_rule ties);

/// Link load of an all-to-all that sends one chunk between every ordered pair of ranks.
struct all_to_all_load {
    int rounds           = 0;  // longest route in hops (the diameter)
    int64_t busiest_link = 0;  // chunks on the most loaded directed link
    /// Σ over hop rounds t of the most chunks any one link carries as the t-th hop of their
    /// route: what a schedule pays that moves every chunk one hop per round and sends all
    /// chunks of a link and round as one message. -1 when not counted (wave_count_limit).
    int64_t wave = 0;
};

/// Counted from the routes, but per dimension: a chunk crosses a dimension-i link only
/// with its coordinates before i already at the destination's and those after i still at
/// the source's, so the load of that link is N/n_i times a one-dimensional count, which has
/// a closed form per hop. The busiest link costs O(Σ n_i). The wave needs a histogram per
/// distinct prefix of coordinates (one on a torus, up to Π⌈n_j/2⌉ on a mesh) and is left
/// uncounted (-1) when that would take more than wave_work_limit elementary steps (rings
/// beyond about 11000 ranks, lines beyond about 8000, meshes beyond about 64×64×64).
all_to_all_load count_all_to_all(const topology::shape& s, tie_rule ties);
constexpr int64_t wave_work_limit = int64_t{1} << 27;

}  // namespace loom::routing
