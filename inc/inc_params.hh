// SPDX-License-Identifier: Apache-2.0
// In-network aggregation, as a rank uses it: its node(s), ticket, window and link faults.
#pragma once

#include "base/params.hh"

namespace loom::inc::params {

using loom::params::flag;

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"inc"};

inline const loom::params::string_param switch_address{
    component, "LOOM_SWITCH", "",
    "aggregation node(s) of in-network collectives: one address for every rank (tcp:HOST:PORT or "
    "shm:NAME), or ID=ADDR,ID=ADDR naming the in-network switches of LOOM_SWITCH_FABRIC; unset: no "
    "in-network algorithm (loomrun --switch sets it)"};
inline const loom::params::string_param switch_fabric{
    component, "LOOM_SWITCH_FABRIC", "",
    "fabric file whose switches (with their parents) form the aggregation tree: each rank uses the "
    "in-network switch it is linked to"};
inline const loom::params::string_param ticket{
    component, "LOOM_INC_TICKET", "",
    "JOB:HEX, this job's ticket at its aggregation node(s): proves the joins and names the node's "
    "job (loomrun --switch sets it; `loom-switch ticket` prints one)",
    flag::secret};
inline const loom::params::int_param slots{component, "LOOM_INC_SLOTS", "16", "slots",
                                           "aggregation slots a communicator asks its node for "
                                           "(the window of 8 KiB chunks in flight per rank)"};
inline const loom::params::real_param drop{
    component, "LOOM_INC_DROP", "0", "probability",
    "chance that a packet this rank sends to its aggregation node is dropped (the fault wrapper of "
    "the inc link; the node's own loss is loom-switch "
    "--drop)"};
inline const loom::params::real_param dup{
    component, "LOOM_INC_DUP", "0", "probability",
    "chance that a packet this rank sends to its aggregation node is sent twice"};
inline const loom::params::real_param reorder{
    component, "LOOM_INC_REORDER", "0", "probability",
    "chance that a packet to the aggregation node is held back and sent after the next"};
inline const loom::params::int_param deterministic{
    component, "LOOM_INC_DETERMINISTIC", "1", "",
    "1: the node reduces contributions in rank order (bitwise reproducible float sums); 0: in "
    "arrival order"};

}  // namespace loom::inc::params
