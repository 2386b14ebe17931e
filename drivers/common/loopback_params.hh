// SPDX-License-Identifier: Apache-2.0
// The loopback matcher (drivers/common/loopback.hh): the self driver and every driver's route
// to its own rank.
#pragma once

#include "base/params.hh"

namespace loom::drivers::common::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"self"};

inline const loom::params::int_param max_ops{
    component, "LOOM_SELF_MAX_OPS", "4096", "operations",
    "operations the self driver keeps posted at once; more is LOOM_ERR_NO_RESOURCE"};

}  // namespace loom::drivers::common::params
