// The logging settings (log.cc).
#pragma once

#include "params.hh"

namespace loom::log::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"log"};

inline const loom::params::choice_param level{component, "LOOM_LOG_LEVEL", "warn",
                                              "error|warn|info|debug|trace",
                                              "how much loom logs to stderr"};

}  // namespace loom::log::params
