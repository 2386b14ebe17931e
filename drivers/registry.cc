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
    if (name == "ofi") {
#if LOOM_BUILT_OFI
        return open_ofi(config);
#else
        return not_supported("ofi: this loom was built without the ofi driver (" +
                             std::string(LOOM_FEATURES) + ")");
#endif
    }
    if (name == "verbs") {
#if LOOM_BUILT_VERBS
        return open_verbs(config);
#else
        return not_supported("verbs: this loom was built without the verbs driver (" +
                             std::string(LOOM_FEATURES) + ")");
#endif
    }
    if (name == "dpdk") {
#if LOOM_BUILT_DPDK
        return open_dpdk(config);
#else
        return not_supported("dpdk: this loom was built without the dpdk driver (" +
                             std::string(LOOM_FEATURES) + ")");
#endif
    }
    if (name == "dpu") {
#if LOOM_BUILT_DPDK
        return open_dpu(config);
#else
        return not_supported("dpu: this loom was built without the dpdk driver (" +
                             std::string(LOOM_FEATURES) + ")");
#endif
    }
    if (name == "rel:shm") {
        return open_reliable_shm(config);  // drivers/reliable over shm datagrams
    }
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
    return invalid_argument(
        "unknown driver '" + std::string(name) + "' (available: self, shm, tcp" +
        (LOOM_BUILT_OFI ? ", ofi" : "") + (LOOM_BUILT_VERBS ? ", verbs" : "") +
        (LOOM_BUILT_DPDK ? ", dpdk, dpu" : "") + ", rel:shm, fault:<driver>, fwd:<driver>)");
}

std::vector<std::string> available() {
    std::vector<std::string> names{"self", "shm", "tcp"};
    if (LOOM_BUILT_OFI) {
        names.push_back("ofi");
    }
    if (LOOM_BUILT_VERBS) {
        names.push_back("verbs");
    }
    if (LOOM_BUILT_DPDK) {
        names.push_back("dpdk");
        names.push_back("dpu");
    }
    names.insert(names.end(), {"rel:shm", "fault", "fwd"});
    return names;
}

std::vector<std::string> network_transports() {
    std::vector<std::string> names;
#if LOOM_BUILT_OFI
    if (ofi_preferred_across_hosts()) {
        names.push_back("ofi");
    }
#endif
    names.push_back("tcp");
    return names;
}

}  // namespace loom::drivers
