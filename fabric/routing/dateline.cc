// SPDX-License-Identifier: Apache-2.0
#include "dateline.hh"

namespace loom::routing {

std::string_view vc_policy_name(vc_policy p) {
    return p == vc_policy::dateline ? "dateline" : "none";
}

int vc_count(const topology::shape& s, vc_policy p) {
    if (p == vc_policy::none || !s.wraps()) {
        return 1;
    }
    for (int d : s.dims()) {
        if (d >= 3) {
            return 2;
        }
    }
    return 1;
}

int port_of(const topology::shape& s, int dim, int step) {
    // Both ways round a 2-ring are the one link: one port, so one channel per VC.
    const bool one_link = s.dims()[dim] == 2;
    return 2 * dim + (step < 0 && !one_link ? 1 : 0);
}

int direct_port(const topology::shape& s, int from, int to) {
    if (s.type() == topology::kind::star) {
        return 0;
    }
    return to < from ? to : to - 1;
}

bool crosses_dateline(int n, bool wraps, int from, int step) {
    if (!wraps || n < 3) {
        return false;
    }
    return (step > 0 && from == n - 1) || (step < 0 && from == 0);
}

int hop_vc(vc_policy p, bool crosses, int arrival_dim, int arrival_vc, int dim) {
    if (p == vc_policy::none) {
        return 0;
    }
    if (crosses) {
        return 1;
    }
    return arrival_dim == dim ? arrival_vc : 0;  // VC1 lasts to the end of the dimension
}

hop next_hop_vc(const topology::shape& s, int at, int dst, int arrival_dim, int arrival_vc,
                tie_rule ties, vc_policy p) {
    hop h;
    h.from = at;
    if (!s.is_lattice()) {
        h.to   = dst;  // star and full mesh: one direct hop, nothing to chain
        h.port = direct_port(s, at, dst);
        return h;
    }
    const auto ac = s.coords(at), dc = s.coords(dst);
    int i = 0;
    while (ac[i] == dc[i]) {
        ++i;
    }
    const int n = s.dims()[i];
    arc a       = axis_arc(n, s.wraps(), ac[i], dc[i], ties);
    h.to        = s.neighbour(at, i, a.step);
    h.dim       = i;
    h.step      = a.step;
    h.port      = port_of(s, i, a.step);
    h.vc = hop_vc(p, crosses_dateline(n, s.wraps(), ac[i], a.step), arrival_dim, arrival_vc, i);
    return h;
}

std::vector<hop> route_hops(const topology::shape& s, int src, int dst, tie_rule ties,
                            vc_policy p) {
    std::vector<hop> out;
    int dim = -1, vc = 0;
    for (int at = src; at != dst;) {
        hop h = next_hop_vc(s, at, dst, dim, vc, ties, p);
        out.push_back(h);
        at  = h.to;
        dim = h.dim;
        vc  = h.vc;
    }
    return out;
}

std::string channel_name(const topology::shape& s, const channel& c) {
    return s.rank_label(c.from) + " -> " + s.rank_label(c.to) + " vc" + std::to_string(c.vc);
}

}  // namespace loom::routing
