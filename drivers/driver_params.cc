// SPDX-License-Identifier: Apache-2.0
#include "drivers/driver_params.hh"

#include "drivers/common/loopback_params.hh"
#include "drivers/dpdk/dpdk_params.hh"
#include "drivers/fault/fault_params.hh"
#include "drivers/forward/forward_params.hh"
#include "drivers/ofi/ofi_params.hh"
#include "drivers/reliable/reliable_params.hh"
#include "drivers/shm/shm_params.hh"
#include "drivers/tcp/tcp_params.hh"
#include "drivers/verbs/verbs_params.hh"

namespace loom::drivers {

std::span<const loom::params::component* const> parameter_components() {
    static const loom::params::component* const list[] = {
        &common::params::component, &shm::params::component,      &tcp::params::component,
        &fault::params::component,  &forward::params::component,  &ofi::params::component,
        &verbs::params::component,  &reliable::params::component, &dpdk::params::component,
    };
    return list;
}

}  // namespace loom::drivers
