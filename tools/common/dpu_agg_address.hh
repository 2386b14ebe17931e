// SPDX-License-Identifier: Apache-2.0
// The datagram addresses of loom-dpu --aggregate's nodes (tools/loom-dpu/aggregate.hh),
// derived from the job's --dir alike by loom-dpu and loomrun (header-only, shared here:
// loomrun may not depend on tools/loom-dpu).
#pragma once

#include <string>

namespace loom::dpu {

/// The memif socket name of the job: --dir's last part, in the characters a dpdk:memif NAME
/// allows (A-Z a-z 0-9 - _ .; others become _), its last 48 at most.
inline std::string agg_name(const std::string& dir) {
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') {
        d.pop_back();
    }
    std::string base = d.substr(d.find_last_of('/') + 1), out;
    for (char c : base) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        out += ok ? c : '_';
    }
    if (out.size() > 48) {
        out = out.substr(out.size() - 48);
    }
    return out.empty() ? "loom-dpu" : out;
}

/// Node n's leaf: dpdk:memif:NAME-a<n>.
inline std::string leaf_address(const std::string& dir, int node) {
    return "dpdk:memif:" + agg_name(dir) + "-a" + std::to_string(node);
}

/// The root, hosted by node 0: dpdk:memif:NAME-root.
inline std::string root_address(const std::string& dir) {
    return "dpdk:memif:" + agg_name(dir) + "-root";
}

}  // namespace loom::dpu
