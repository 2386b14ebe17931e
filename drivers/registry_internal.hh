// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/: each driver's factory, called only by registry.cc.
#pragma once

#include "drivers/driver.hh"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_self(const endpoint_config& config);  // self/
result<std::unique_ptr<endpoint>> open_shm(const endpoint_config& config);   // shm/
result<std::unique_ptr<endpoint>> open_tcp(const endpoint_config& config);   // tcp/
result<std::unique_ptr<endpoint>> open_ofi(const endpoint_config& config);   // ofi/ (libfabric)
/// Wraps `inner`: drops, duplicates, reorders or delays by parameters (fault/).
result<std::unique_ptr<endpoint>> open_fault(std::unique_ptr<endpoint> inner,
                                             const endpoint_config& config);

}  // namespace loom::drivers
