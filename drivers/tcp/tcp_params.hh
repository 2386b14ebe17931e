// The tcp driver: where it listens, message limits, back-pressure, socket buffers.
#pragma once

#include "base/params.hh"

namespace loom::drivers::tcp::params {

extern const loom::params::string_param addr;
extern const loom::params::string_param iface;
extern const loom::params::int_param eager_limit;
extern const loom::params::int_param send_queue;
extern const loom::params::int_param max_messages;
extern const loom::params::int_param unexpected_bytes;
extern const loom::params::int_param sockbuf;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::drivers::tcp::params
