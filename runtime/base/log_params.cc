#include "log_params.hh"

namespace loom::log::params {

constinit const loom::params::choice_param level{
    "LOOM_LOG_LEVEL", "warn", "error|warn|info|debug|trace", "how much loom logs to stderr"};

const loom::params::component component{"log", {&level}};

}  // namespace loom::log::params
