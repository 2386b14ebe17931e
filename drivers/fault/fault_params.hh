// SPDX-License-Identifier: Apache-2.0
// The fault wrapper (fault:<driver>): faults on sends, off by default.
#pragma once

#include "base/params.hh"

namespace loom::drivers::fault::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"fault"};

inline const loom::params::real_param drop{
    component, "LOOM_FAULT_DROP", "0", "probability",
    "chance that fault:<driver> drops a send (reported sent, never posted)"};
inline const loom::params::real_param dup{
    component, "LOOM_FAULT_DUP", "0", "probability",
    "chance that fault:<driver> posts a send twice (messages up to the eager limit)"};
inline const loom::params::real_param reorder{
    component, "LOOM_FAULT_REORDER", "0", "probability",
    "chance that fault:<driver> holds a send back and posts it after the next one"};
inline const loom::params::int_param delay_us{
    component, "LOOM_FAULT_DELAY_US", "0", "us",
    "how long fault:<driver> holds every send before posting it"};
inline const loom::params::int_param seed{
    component, "LOOM_FAULT_SEED", "1", "",
    "seed of fault:<driver>'s decisions (mixed with the rank)"};
inline const loom::params::int_param max_ops{
    component, "LOOM_FAULT_MAX_OPS", "65536", "operations",
    "operations in flight through fault:<driver>; one more is LOOM_ERR_NO_RESOURCE"};

}  // namespace loom::drivers::fault::params
