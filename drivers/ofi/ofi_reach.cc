// SPDX-License-Identifier: Apache-2.0
// Whether a communicator whose ranks span several hosts, and whose transport nobody named,
// should take the ofi driver rather than loom's own tcp (drivers::network_transports).
#include <algorithm>

#include "drivers/ofi/ofi_fabric.hh"
#include "drivers/registry_internal.hh"

namespace loom::drivers {
namespace {

// The providers that carry messages over the kernel's sockets (or one host's memory): over
// these loom's own tcp driver is as direct, and measured faster (docs/performance.md#multi-node).
bool over_sockets(std::string_view provider) {
    std::string_view core = provider.substr(0, provider.find(';'));
    return core == "tcp" || core == "net" || core == "udp" || core == "sockets" || core == "shm";
}

}  // namespace

bool ofi_preferred_across_hosts() {
    // A provider named by the user is what the user wants (any but shm, which reaches one
    // host; a missing one fails at open, naming those present). Unset: ofi when libfabric
    // offers a provider on a fabric of its own (cxi, efa, verbs;ofi_rxm, psm3, ...), which its
    // best-available rule then takes.
    std::string asked = ofi::requested_provider();
    if (!asked.empty()) {
        return asked != "shm";
    }
    std::vector<std::string> offered = ofi::available_providers(ofi::fabric_request{});
    return std::any_of(offered.begin(), offered.end(),
                       [](const std::string& p) { return !over_sockets(p); });
}

}  // namespace loom::drivers
