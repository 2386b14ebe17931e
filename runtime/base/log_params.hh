// The logging settings (log.cc).
#pragma once

#include "params.hh"

namespace loom::log::params {

extern const loom::params::choice_param level;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::log::params
