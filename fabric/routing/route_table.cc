// SPDX-License-Identifier: Apache-2.0
#include "route_table.hh"

namespace loom::routing {
namespace {

route_entry direct_entry(const topology::shape& s, int router, int dst) {
    route_entry e;
    e.next = dst;
    e.port = direct_port(s, router, dst);
    return e;
}

route_entry lattice_entry(const topology::shape& s, int router, int dst, tie_rule ties,
                          vc_policy vcs) {
    // Asked as if the chunk started here: the hop's VC is then 1 exactly when it crosses
    // the dateline, which is the part of the rule that depends on the destination only.
    const hop h = next_hop_vc(s, router, dst, -1, 0, ties, vcs);
    route_entry e;
    e.next            = h.to;
    e.port            = h.port;
    e.dim             = static_cast<int16_t>(h.dim);
    const bool closes = s.wraps() && s.dims()[h.dim] >= 3;
    if (vcs == vc_policy::dateline && closes) {
        e.vc = h.vc == 1 ? vc_rule::vc1 : vc_rule::keep;
    }
    return e;
}

}  // namespace

route_table route_table::build(const topology::shape& s, int router, tie_rule ties, vc_policy vcs) {
    route_table t;
    t.router_ = router;
    t.entries_.resize(s.size());
    for (int dst = 0; dst < s.size(); ++dst) {
        if (dst == router) {
            continue;  // the default entry: next -1, delivered here
        }
        t.entries_[dst] = s.is_lattice() ? lattice_entry(s, router, dst, ties, vcs)
                                         : direct_entry(s, router, dst);
    }
    return t;
}

std::vector<route_table> build_route_tables(const topology::shape& s, tie_rule ties,
                                            vc_policy vcs) {
    std::vector<route_table> out;
    out.reserve(s.size());
    for (int r = 0; r < s.size(); ++r) {
        out.push_back(route_table::build(s, r, ties, vcs));
    }
    return out;
}

}  // namespace loom::routing
