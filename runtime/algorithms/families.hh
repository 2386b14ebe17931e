// SPDX-License-Identifier: Apache-2.0
// One entry point per algorithm family file; registry.cc concatenates them into the
// catalogue. A family returns pointers to its static `algorithm` tables.
#pragma once

#include <vector>

#include "algorithm.hh"

namespace loom::algorithms {

std::vector<const algorithm*> family_ring();                // ring.cc
std::vector<const algorithm*> family_ring_bidirectional();  // ring_bidirectional.cc
std::vector<const algorithm*> family_binomial();            // binomial.cc
std::vector<const algorithm*> family_scatter_allgather();   // scatter_allgather.cc
std::vector<const algorithm*> family_double_binary_tree();  // double_binary_tree.cc
std::vector<const algorithm*> family_recursive_doubling();  // recursive_doubling.cc
std::vector<const algorithm*> family_rabenseifner();        // rabenseifner.cc
std::vector<const algorithm*> family_pat();                 // pat.cc
std::vector<const algorithm*> family_bruck();               // bruck.cc
std::vector<const algorithm*> family_alltoall_pairwise();   // alltoall_pairwise.cc
std::vector<const algorithm*> family_alltoall_relay();      // alltoall_relay.cc
std::vector<const algorithm*> family_torus_dims();          // torus_dims.cc
std::vector<const algorithm*> family_hier_ring();           // hier_ring.cc
std::vector<const algorithm*> family_dims_rabenseifner();   // torus_dims_rabenseifner.cc
std::vector<const algorithm*> family_sendrecv();            // sendrecv.cc
std::vector<const algorithm*> family_inc();                 // inc.cc
std::vector<const algorithm*> family_flat();                // flat.cc

}  // namespace loom::algorithms
