// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/: each datagram provider's factories, called only by
// datagram_registry.cc. `rest` is the address without its "tcp:" / "shm:" / "ofi:" / "dpdk:"
// prefix.
#pragma once

#include "drivers/datagram.hh"

namespace loom::drivers {

namespace tcp {
result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s);
result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view rest);
}  // namespace tcp

namespace shm {
result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view name,
                                                            double timeout_s);
result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view name);
}  // namespace shm

namespace ofi {
/// `rest`: "PROVIDER/HEX-ADDRESS".
result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s);
/// `provider`: a libfabric provider name, or "" for the best available.
result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view provider);
}  // namespace ofi

namespace dpdk {
/// `rest`: "memif:NAME[:ID]" or "af_packet:IFACE" (drivers/dpdk/dpdk_datagram.cc).
result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s);
result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view rest);
}  // namespace dpdk

}  // namespace loom::drivers
