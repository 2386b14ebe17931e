#include "inc_params.hh"

namespace loom::inc::params {

using loom::params::flag;

constinit const loom::params::string_param switch_address{
    "LOOM_SWITCH", "",
    "aggregation node(s) of in-network collectives: one address for every rank (tcp:HOST:PORT or "
    "shm:NAME), or ID=ADDR,ID=ADDR naming the in-network switches of LOOM_SWITCH_FABRIC; unset: no "
    "in-network algorithm (loomrun --switch sets it)"};
constinit const loom::params::string_param switch_fabric{
    "LOOM_SWITCH_FABRIC", "",
    "fabric file whose switches (with their parents) form the aggregation tree: each rank uses the "
    "in-network switch it is linked to"};
constinit const loom::params::string_param ticket{
    "LOOM_INC_TICKET", "",
    "JOB:HEX, this job's ticket at its aggregation node(s): proves the joins and names the node's "
    "job (loomrun --switch sets it; `loom-switch ticket` prints one)",
    flag::secret};
constinit const loom::params::int_param slots{"LOOM_INC_SLOTS", "16", "slots",
                                              "aggregation slots a communicator asks its node for "
                                              "(the window of 8 KiB chunks in flight per rank)"};
constinit const loom::params::real_param drop{
    "LOOM_INC_DROP", "0", "probability",
    "chance that a packet this rank sends to its aggregation node is dropped (the fault wrapper of "
    "the inc link, G14; the node's own loss is loom-switch --drop)"};
constinit const loom::params::real_param dup{
    "LOOM_INC_DUP", "0", "probability",
    "chance that a packet this rank sends to its aggregation node is sent twice"};
constinit const loom::params::real_param reorder{
    "LOOM_INC_REORDER", "0", "probability",
    "chance that a packet to the aggregation node is held back and sent after the next"};
constinit const loom::params::int_param deterministic{
    "LOOM_INC_DETERMINISTIC", "1", "",
    "1: the node reduces contributions in rank order (bitwise reproducible float sums); 0: in "
    "arrival order"};

const loom::params::component component{
    "inc",
    {&switch_address, &switch_fabric, &ticket, &slots, &drop, &dup, &reorder, &deterministic}};

}  // namespace loom::inc::params
