#include "drivers/common/loopback_params.hh"

namespace loom::drivers::common::params {

constinit const loom::params::int_param max_ops{
    "LOOM_SELF_MAX_OPS", "4096", "operations",
    "operations the self driver keeps posted at once; more is LOOM_ERR_NO_RESOURCE"};

const loom::params::component component{"self", {&max_ops}};

}  // namespace loom::drivers::common::params
