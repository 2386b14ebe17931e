// The forwarding wrapper (fwd:<driver>): chunking and flow control (its fabric and tie rule
// are fabric/routing's parameters).
#pragma once

#include "base/params.hh"

namespace loom::drivers::forward::params {

extern const loom::params::int_param chunk;
extern const loom::params::int_param buffers;
extern const loom::params::int_param max_ops;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::drivers::forward::params
