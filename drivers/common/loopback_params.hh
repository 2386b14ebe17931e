// The loopback matcher (drivers/common/loopback.hh): the self driver and every driver's route
// to its own rank.
#pragma once

#include "base/params.hh"

namespace loom::drivers::common::params {

extern const loom::params::int_param max_ops;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::drivers::common::params
