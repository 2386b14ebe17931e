// SPDX-License-Identifier: Apache-2.0
// The fabric a forwarding transport routes over and its tie rule: read by the forwarding
// driver and by communicators (whose lattice algorithms route as the forwarder does).
#pragma once

#include "base/params.hh"

namespace loom::routing::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"routing"};

inline const loom::params::string_param fabric{
    component, "LOOM_FABRIC", "",
    "shape fwd:<driver> routes over (torus:4x4, mesh:3x3, ring:8); endpoint_config.fabric "
    "overrides; set by loomrun --fabric"};
inline const loom::params::choice_param route_ties{
    component, "LOOM_ROUTE_TIES", "toward-plus", "toward-plus|source-parity",
    "which way fwd:<driver> takes an antipodal tie on an even wrapping dimension "
    "(docs/references.md#dor-ties); "
    "the forwarder and the dor-relay algorithm both follow it"};

}  // namespace loom::routing::params
