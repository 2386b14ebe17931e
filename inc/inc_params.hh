// In-network aggregation, as a rank uses it: its node(s), ticket, window and link faults.
#pragma once

#include "base/params.hh"

namespace loom::inc::params {

extern const loom::params::string_param switch_address;
extern const loom::params::string_param switch_fabric;
extern const loom::params::string_param ticket;
extern const loom::params::int_param slots;
extern const loom::params::real_param drop;
extern const loom::params::real_param dup;
extern const loom::params::real_param reorder;
extern const loom::params::int_param deterministic;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::inc::params
