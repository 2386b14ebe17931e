// SPDX-License-Identifier: Apache-2.0
// Every driver's parameter declarations, in one list: the place above the drivers that must
// know them all (the catalog of runtime/comm) names this list, not each driver.
#pragma once

#include <span>

#include "base/params.hh"

namespace loom::drivers {

/// The parameter components of self, shm, tcp, fault, fwd, ofi, verbs and dpdk (declared in
/// every build, so the settings are known where libfabric or DPDK is not). Referencing them links
/// each driver's declarations into the program, so they are known even where it opens none.
std::span<const loom::params::component* const> parameter_components();

}  // namespace loom::drivers
