// Communicators and the C API: transport, deadlines, progress, algorithms, limits.
#pragma once

#include "base/params.hh"

namespace loom::comm::params {

extern const loom::params::string_param transport;
extern const loom::params::string_param link_stats_dir;
extern const loom::params::real_param timeout;
extern const loom::params::choice_param progress;
extern const loom::params::string_param algo;
extern const loom::params::int_param explain;
extern const loom::params::string_param topology;
extern const loom::params::int_param max_inflight;
extern const loom::params::int_param plan_cache;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::comm::params
