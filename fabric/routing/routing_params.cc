#include "routing_params.hh"

namespace loom::routing::params {

constinit const loom::params::string_param fabric{
    "LOOM_FABRIC", "",
    "shape fwd:<driver> routes over (torus:4x4, mesh:3x3, ring:8); endpoint_config.fabric "
    "overrides; set by loomrun --fabric"};
constinit const loom::params::choice_param route_ties{
    "LOOM_ROUTE_TIES", "toward-plus", "toward-plus|source-parity",
    "which way fwd:<driver> takes an antipodal tie on an even wrapping dimension (ERRATA A10); "
    "the forwarder and the dor-relay algorithm both follow it"};

const loom::params::component component{"routing", {&fabric, &route_ties}};

}  // namespace loom::routing::params
