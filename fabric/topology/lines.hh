// SPDX-License-Identifier: Apache-2.0
// Per-dimension lines of a shape: the ranks that share every coordinate but one. On a
// torus they are the rings a dimension-decomposed algorithm runs on, on a mesh the open
// lines (Lu-TM §3.4, §4.2); a star or full mesh has one line of all ranks.
#pragma once

#include <vector>

#include "topology.hh"

namespace loom::topology {

/// The rank distance between neighbours along `dim`: the product of the dimensions after it
/// (row-major), so a rank's coordinate there is rank / stride mod d_dim.
int dim_stride(const shape& s, int dim);

/// The dimensions with more than one rank, in order.
std::vector<int> active_dims(const shape& s);

/// The ranks that agree with `rank` on every coordinate except `dim`, in coordinate order
/// 0..d-1, so consecutive ranks are neighbours (and last → first too on a wrapping shape).
std::vector<int> dim_line(const shape& s, int rank, int dim);

/// Every line along `dim`: N / d_dim of them, ordered by their first rank.
std::vector<std::vector<int>> dim_lines(const shape& s, int dim);

/// True when the lines along `dim` close into rings: a wrapping shape with d_dim >= 3 (on
/// d = 2 the "ring" is one link, docs/references.md#a2a-bound-range).
bool dim_closes(const shape& s, int dim);

}  // namespace loom::topology
