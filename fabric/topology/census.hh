// SPDX-License-Identifier: Apache-2.0
// Counts over a whole shape without listing it: links, and how many ranks have each number
// of neighbours. O(dims²), so tools can summarise a 16M-rank torus as fast as a ring.
#pragma once

#include <cstdint>
#include <vector>

#include "topology.hh"

namespace loom::topology {

/// Undirected links: a lattice's neighbour links (one on a dimension of size 2, none on
/// size 1), a star's N endpoint–switch links, a full mesh's N(N-1)/2.
int64_t link_count(const shape& s);

/// h[k] = ranks with exactly k distinct neighbours (shape::neighbours().size()); a star's
/// switch is not a rank and is not counted.
std::vector<int64_t> degree_histogram(const shape& s);

/// The histogram of a sum of two independent counts: out[k] = Σ_{i+j=k} a[i]·b[j]. A lattice
/// move changes one coordinate only, so per-dimension histograms (degrees, distances)
/// combine across dimensions this way.
std::vector<int64_t> convolve(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace loom::topology
