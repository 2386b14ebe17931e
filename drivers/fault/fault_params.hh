// The fault wrapper (fault:<driver>): faults on sends, off by default.
#pragma once

#include "base/params.hh"

namespace loom::drivers::fault::params {

extern const loom::params::real_param drop;
extern const loom::params::real_param dup;
extern const loom::params::real_param reorder;
extern const loom::params::int_param delay_us;
extern const loom::params::int_param seed;
extern const loom::params::int_param max_ops;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::drivers::fault::params
