// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/: each driver's factory, called only by registry.cc.
#pragma once

#include "drivers/driver.hh"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_self(const endpoint_config& config);  // self/
result<std::unique_ptr<endpoint>> open_shm(const endpoint_config& config);   // shm/
result<std::unique_ptr<endpoint>> open_tcp(const endpoint_config& config);   // tcp/
result<std::unique_ptr<endpoint>> open_ofi(const endpoint_config& config);   // ofi/ (libfabric)
/// The reliable endpoint over DPDK ports, a full mesh of memif pairs (dpdk/).
result<std::unique_ptr<endpoint>> open_dpdk(const endpoint_config& config);
/// The reliable endpoint over one DPDK port to the rank's own DPU, tools/loom-dpu (dpdk/).
result<std::unique_ptr<endpoint>> open_dpu(const endpoint_config& config);
/// rdma-core: "verbs: no RDMA device ..." where ibv_get_device_list finds none (verbs/).
result<std::unique_ptr<endpoint>> open_verbs(const endpoint_config& config);
/// True when ranks on several hosts should take ofi by themselves: LOOM_OFI_PROVIDER names a
/// provider other than shm, or, unset, libfabric offers one on a fabric of its own (cxi, efa,
/// verbs;ofi_rxm, …; not over sockets, where tcp serves): ofi/ofi_reach.cc.
bool ofi_preferred_across_hosts();
/// The reliable protocol over a mesh of shm datagram links, "rel:shm" (reliable/).
result<std::unique_ptr<endpoint>> open_reliable_shm(const endpoint_config& config);
/// Wraps `inner`: drops, duplicates, reorders or delays by parameters (fault/).
result<std::unique_ptr<endpoint>> open_fault(std::unique_ptr<endpoint> inner,
                                             const endpoint_config& config);

}  // namespace loom::drivers
