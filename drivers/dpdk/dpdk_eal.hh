// SPDX-License-Identifier: Apache-2.0
// DPDK's environment abstraction layer, started once per process on the first use of any
// dpdk object (rte_eal_init may run only once, and a process that forks after it has a child
// DPDK does not support: fork first). Its arguments come from LOOM_DPDK_EAL_ARGS, else a
// default that needs no hugepages, NICs or shared files (dpdk_eal.cc says why each).
#pragma once

#include <string>
#include <vector>

#include "base/status.hh"

namespace loom::drivers::dpdk {

/// Starts the EAL if this process has not yet: ok once it runs; the same error every call
/// after a failed start (naming the arguments and DPDK's reason).
status ensure_eal();

/// The arguments the EAL starts (or started) with, argv[0] excluded.
std::vector<std::string> eal_arguments();

/// A name unique in this process for a vdev or a pool ("loom3"), as DPDK wants one per object.
std::string unique_name(const char* what);

}  // namespace loom::drivers::dpdk
