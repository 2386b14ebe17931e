// The tuner's cost model and calibration file.
#pragma once

#include "base/params.hh"

namespace loom::tuner::params {

extern const loom::params::choice_param port_model;
extern const loom::params::string_param calibration_file;
extern const loom::params::choice_param calibrate;
extern const loom::params::string_param xdg_cache_home;
extern const loom::params::string_param home;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::tuner::params
