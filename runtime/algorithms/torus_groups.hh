// SPDX-License-Identifier: Apache-2.0
// The nested block ownership of the dimension-decomposed families (torus_dims.cc and
// torus_dims_rabenseifner.cc): phase `dim` of rank r works on its level-`dim` group's piece
// of the vector, cut at flat block boundaries into one sub-piece per line coordinate, so
// rank r ends the reduce-scatter phases with exactly flat block r.
#pragma once

#include <cstdint>

#include "ring_patterns.hh"
#include "topology/topology.hh"

namespace loom::algorithms {

/// Rank r's coordinate along `dim` (row-major, topology.hh).
int coord_of(const topology::shape& t, int rank, int dim);

/// Rank r's level-`dim` group, the ranks sharing c_0..c_{dim-1} with r: [first, first+size).
struct dim_group {
    int first, size;
};
dim_group group_of(const topology::shape& t, int rank, int dim);

/// The group's piece of the vector cut into its d sub-groups' pieces (flat block bounds),
/// relative to the piece's first element.
block_layout nested_layout(int64_t count, int nranks, dim_group g, int d);

}  // namespace loom::algorithms
