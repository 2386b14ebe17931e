// SPDX-License-Identifier: Apache-2.0
// The checks fabric::make runs, kept apart from the indexing so each reads on its own.
// Internal to fabric/topology.
#pragma once

#include <optional>
#include <vector>

#include "fabric.hh"

namespace loom::topology::detail {

/// Ids, kinds, ranks 0..R-1 once each, the shape's size and coordinates, parents. R is the
/// number of nodes that carry a rank.
status check_nodes(const std::vector<node>& nodes, const std::optional<shape>& lattice);
/// Ends in range and distinct, class in range, α finite and ≥ 0, BW finite and > 0.
status check_links(const std::vector<node>& nodes, const std::vector<link>& links, size_t nclasses);

}  // namespace loom::topology::detail
