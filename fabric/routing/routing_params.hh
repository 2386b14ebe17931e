// The fabric a forwarding transport routes over and its tie rule: read by the forwarding
// driver and by communicators (whose lattice algorithms route as the forwarder does).
#pragma once

#include "base/params.hh"

namespace loom::routing::params {

extern const loom::params::string_param fabric;
extern const loom::params::choice_param route_ties;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::routing::params
