// Whether the ofi driver can reach other hosts here, for a communicator whose ranks span
// several hosts and whose transport nobody named (drivers::network_transports).
#include <algorithm>

#include "drivers/ofi/ofi_fabric.hh"
#include "drivers/registry_internal.hh"

namespace loom::drivers {

bool ofi_reaches_other_hosts() {
    // A named provider decides (a missing one fails at open, naming those present); unset,
    // the best available is a network one whenever libfabric offers any besides shm, which
    // the choice puts last.
    std::string asked = ofi::requested_provider();
    if (!asked.empty()) {
        return asked != "shm";
    }
    std::vector<std::string> offered = ofi::available_providers(ofi::fabric_request{});
    return std::any_of(offered.begin(), offered.end(),
                       [](const std::string& p) { return p != "shm"; });
}

}  // namespace loom::drivers
