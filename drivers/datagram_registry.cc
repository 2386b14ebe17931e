// SPDX-License-Identifier: Apache-2.0
// Datagram addresses -> providers: the only place that knows their prefixes (datagram.hh).
#include "base/check.hh"
#include "drivers/datagram_internal.hh"
#include "drivers/fault/fault.hh"
#include "loom_config.h"

namespace loom::drivers {
namespace {

status unknown(std::string_view address) {
    return invalid_argument("unknown datagram address '" + std::string(address) +
                            "': expected tcp:HOST:PORT, shm:NAME, ofi:PROVIDER/ADDRESS, "
                            "dpdk:memif:NAME[:ID], dpdk:af_packet:IFACE or fault:ADDRESS");
}

#if !LOOM_BUILT_OFI
status ofi_not_built(std::string_view address) {
    return not_supported("datagram address '" + std::string(address) +
                         "': this loom was built without the ofi driver (libfabric)");
}
#endif

#if !LOOM_BUILT_DPDK
status dpdk_not_built(std::string_view address) {
    return not_supported("datagram address '" + std::string(address) +
                         "': this loom was built without the dpdk driver (libdpdk)");
}
#endif

}  // namespace

result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view address,
                                                            double timeout_s) {
    if (address.starts_with("tcp:")) {
        return tcp::connect_datagram(address.substr(4), timeout_s);
    }
    if (address.starts_with("shm:")) {
        return shm::connect_datagram(address.substr(4), timeout_s);
    }
    if (address.starts_with("ofi:")) {
#if LOOM_BUILT_OFI
        return ofi::connect_datagram(address.substr(4), timeout_s);
#else
        return ofi_not_built(address);
#endif
    }
    if (address.starts_with("dpdk:")) {
#if LOOM_BUILT_DPDK
        return dpdk::connect_datagram(address.substr(5), timeout_s);
#else
        return dpdk_not_built(address);
#endif
    }
    if (address.starts_with("fault:")) {
        LOOM_ASSIGN(auto config, fault::config_from_params());
        LOOM_ASSIGN(auto inner, connect_datagram(address.substr(6), timeout_s));
        return lossy_datagram(std::move(inner), config.drop, config.dup, config.reorder,
                              config.seed);
    }
    return unknown(address);
}

result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view address) {
    if (address.starts_with("tcp:")) {
        return tcp::listen_datagram(address.substr(4));
    }
    if (address.starts_with("shm:")) {
        return shm::listen_datagram(address.substr(4));
    }
    if (address.starts_with("ofi:")) {
#if LOOM_BUILT_OFI
        return ofi::listen_datagram(address.substr(4));
#else
        return ofi_not_built(address);
#endif
    }
    if (address.starts_with("dpdk:")) {
#if LOOM_BUILT_DPDK
        return dpdk::listen_datagram(address.substr(5));
#else
        return dpdk_not_built(address);
#endif
    }
    return unknown(address);
}

}  // namespace loom::drivers
