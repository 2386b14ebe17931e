// SPDX-License-Identifier: Apache-2.0
// Driver names -> factories: the only place that knows which drivers exist
// (docs/architecture.md#rule-capabilities).
#include "drivers/forward/forward.hh"
#include "drivers/registry_internal.hh"
#include "loom_config.h"

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open(std::string_view name, const endpoint_config& config) {
    if (name == "self") {
        return open_self(config);
    }
    if (name == "shm") {
        return open_shm(config);
    }
    if (name == "tcp") {
        return open_tcp(config);
    }
#if LOOM_BUILT_OFI
    if (name == "ofi") {
        return open_ofi(config);
    }
#endif
    if (name.substr(0, 6) == "fault:") {
        auto inner = open(name.substr(6), config);
        if (!inner) {
            return inner.error();
        }
        return open_fault(std::move(inner).value(), config);
    }
    if (name.substr(0, 4) == "fwd:") {
        return forward::open(name.substr(4), config);  // opens the inner one itself
    }
    return invalid_argument("unknown driver '" + std::string(name) +
                            "' (available: self, shm, tcp" + (LOOM_BUILT_OFI ? ", ofi" : "") +
                            ", fault:<driver>, fwd:<driver>)");
}

std::vector<std::string> available() {
    std::vector<std::string> names{"self", "shm", "tcp"};
    if (LOOM_BUILT_OFI) {
        names.push_back("ofi");
    }
    names.insert(names.end(), {"fault", "fwd"});
    return names;
}

}  // namespace loom::drivers
