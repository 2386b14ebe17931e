#include "fault_params.hh"

namespace loom::drivers::fault::params {

constinit const loom::params::real_param drop{
    "LOOM_FAULT_DROP", "0", "probability",
    "chance that fault:<driver> drops a send (reported sent, never posted)"};
constinit const loom::params::real_param dup{
    "LOOM_FAULT_DUP", "0", "probability",
    "chance that fault:<driver> posts a send twice (messages up to the eager limit)"};
constinit const loom::params::real_param reorder{
    "LOOM_FAULT_REORDER", "0", "probability",
    "chance that fault:<driver> holds a send back and posts it after the next one"};
constinit const loom::params::int_param delay_us{
    "LOOM_FAULT_DELAY_US", "0", "us", "how long fault:<driver> holds every send before posting it"};
constinit const loom::params::int_param seed{
    "LOOM_FAULT_SEED", "1", "", "seed of fault:<driver>'s decisions (mixed with the rank)"};
constinit const loom::params::int_param max_ops{
    "LOOM_FAULT_MAX_OPS", "65536", "operations",
    "operations in flight through fault:<driver>; one more is LOOM_ERR_NO_RESOURCE"};

const loom::params::component component{"fault",
                                        {&drop, &dup, &reorder, &delay_us, &seed, &max_ops}};

}  // namespace loom::drivers::fault::params
