// The self driver (one rank, loopback).
#pragma once

#include "base/params.hh"

namespace loom::drivers::self::params {

extern const loom::params::int_param max_ops;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::drivers::self::params
