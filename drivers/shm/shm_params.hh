// The shm driver: ring geometry, pools, the large-message path, liveness.
#pragma once

#include "base/params.hh"

namespace loom::drivers::shm::params {

extern const loom::params::int_param slot_bytes;
extern const loom::params::int_param ring_slots;
extern const loom::params::int_param unexpected;
extern const loom::params::int_param max_ops;
extern const loom::params::int_param bounce_bytes;
extern const loom::params::choice_param cma;
extern const loom::params::real_param liveness_ms;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::drivers::shm::params
