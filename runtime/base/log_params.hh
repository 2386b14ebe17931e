// SPDX-License-Identifier: Apache-2.0
// The logging settings (log.cc).
#pragma once

#include "log.hh"
#include "params.hh"

namespace loom::log::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"log"};

inline const loom::params::choice_param level{component, "LOOM_LOG_LEVEL", "warn",
                                              "error|warn|info|debug|trace",
                                              "how much loom logs to stderr"};
inline const loom::params::choice_list_param subsystems{
    component, "LOOM_LOG_SUBSYSTEMS", "all", loom::log::subsystem_choices,
    "the subsystems whose debug and trace lines are shown (errors, warnings and info always "
    "are)"};

}  // namespace loom::log::params
