// SPDX-License-Identifier: Apache-2.0
// Links and paths of the modeled fabric (links.hh).
#include "links.hh"

#include <algorithm>

namespace loom::sim::detail {

status link_table::init(const fabric& f, int nranks) {
    f_     = f;
    costs_ = f_.per_link.get();
    n_     = nranks;
    wraps_ = f.topo.wraps();
    links_.clear();
    agg_.clear();
    if (f.topo.is_lattice()) {
        mode_ = mode::lattice;
        dims_ = f.topo.dims();
        stride_.assign(dims_.size(), 1);
        for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) {
            stride_[i] = stride_[i + 1] * dims_[i + 1];
        }
        const int k = static_cast<int>(dims_.size());
        links_.reserve(static_cast<size_t>(nranks) * 2 * k);
        for (int r = 0; r < nranks; ++r) {
            for (int d = 0; d < k; ++d) {
                for (int way = 0; way < 2; ++way) {
                    int step    = way == 0 ? 1 : -1;
                    int to      = dims_[d] > 1 && !(way == 1 && wraps_ && dims_[d] == 2)
                                      ? f.topo.neighbour(r, d, step)
                                      : -1;
                    uint32_t id = add(r, to, false);
                    if (costs_ == nullptr || to < 0) {
                        continue;
                    }
                    const link_costs::cost* c = pair_cost(r, to);
                    if (c == nullptr) {
                        return invalid_argument("per-link costs: no link between ranks " +
                                                std::to_string(r) + " and " + std::to_string(to) +
                                                " of " + f.topo.to_string());
                    }
                    set_cost(id, *c);
                }
            }
        }
    } else if (f.ports == algorithms::port_model::single_port) {
        mode_ = mode::single_port;
        links_.reserve(static_cast<size_t>(nranks) * 2);
        for (int r = 0; r < nranks; ++r) {
            uint32_t up = add(r, -1, false), down = add(-1, r, false);
            if (costs_ != nullptr) {  // check_fabric: a star's ports, one per rank
                set_cost(up, costs_->port[r]);
                set_cost(down, costs_->port[r]);
            }
        }
    } else {
        mode_ = mode::per_edge;
    }
    return status::ok();
}

uint32_t link_table::add(int32_t from, int32_t to, bool agg) {
    link_state l;
    l.from    = from;
    l.to      = to;
    l.agg     = agg;
    l.alpha_s = f_.alpha_s;
    l.rate    = f_.bw_bytes_per_s * f_.efficiency;  // the engine's uniform arithmetic
    links_.push_back(l);
    return static_cast<uint32_t>(links_.size() - 1);
}

void link_table::set_cost(uint32_t id, const link_costs::cost& c) {
    link_state& l = links_[id];
    l.alpha_s     = c.alpha_s;
    l.rate        = c.bw_bytes_per_s * f_.efficiency;
    l.alpha_units = f_.alpha_s > 0 ? c.alpha_s / f_.alpha_s : 1;
}

const link_costs::cost* link_table::pair_cost(int a, int b) const {
    auto it = costs_->pair.find(link_costs::key(a, b));
    return it == costs_->pair.end() ? nullptr : &it->second;
}

void link_table::path(int src, int dst, std::vector<hop>& out) {
    out.clear();
    switch (mode_) {
        case mode::per_edge: {
            uint64_t key = (static_cast<uint64_t>(src) << 32) | static_cast<uint32_t>(dst);
            uint32_t* id = pair_.find(key);
            uint32_t l   = id != nullptr ? *id : pair_.insert(key, add(src, dst, false));
            if (id == nullptr && costs_ != nullptr) {
                if (!costs_->port.empty()) {  // star: the sender's α, the slower port's BW
                    const link_costs::cost &a = costs_->port[src], &b = costs_->port[dst];
                    set_cost(l, {a.alpha_s, std::min(a.bw_bytes_per_s, b.bw_bytes_per_s)});
                } else if (const link_costs::cost* c = pair_cost(src, dst)) {
                    set_cost(l, *c);  // full mesh (check_fabric: every pair)
                }
            }
            out.push_back({l, 1});
            return;
        }
        case mode::single_port:
            // One α per star hop (docs/references.md#star-hop-alpha): charged on the way in.
            out.push_back({static_cast<uint32_t>(2 * src), 1});
            out.push_back({static_cast<uint32_t>(2 * dst + 1), 0});
            return;
        case mode::lattice:
            break;
    }
    // Dimension-ordered: dimension 0 first, each along routing::axis_arc (the arc and tie
    // rule of fabric/routing, so the hops are routing::route()'s; tests/fabric_sim checks).
    const int k = static_cast<int>(dims_.size());
    int at      = src;
    for (int d = 0; d < k; ++d) {
        const int n = dims_[d];
        int from = at / stride_[d] % n, to = dst / stride_[d] % n;
        if (from == to) {
            continue;
        }
        routing::arc a = routing::axis_arc(n, wraps_, from, to, f_.ties);
        int c          = from;
        for (int h = 0; h < a.length; ++h) {
            int way = (a.step > 0 || (wraps_ && n == 2)) ? 0 : 1;
            out.push_back({static_cast<uint32_t>(at * 2 * k + 2 * d + way), 1});
            int next = c + a.step;
            if (wraps_) {
                next = (next + n) % n;
            }
            at += (next - c) * stride_[d];
            c = next;
        }
    }
}

uint32_t link_table::max_hops() const {
    switch (mode_) {
        case mode::per_edge:
            return 1;
        case mode::single_port:
            return 2;
        case mode::lattice:
            break;
    }
    uint32_t h = 0;
    for (int n : dims_) {
        h += static_cast<uint32_t>(wraps_ ? n / 2 : n - 1);  // an arc is at most this long
    }
    return std::max<uint32_t>(h, 1);
}

uint32_t link_table::agg_link(int rank, bool up) {
    if (agg_.empty()) {
        agg_.assign(static_cast<size_t>(n_) * 2, UINT32_MAX);
    }
    uint32_t& id = agg_[2 * rank + (up ? 0 : 1)];
    if (id == UINT32_MAX) {
        id = up ? add(rank, -1, true) : add(-1, rank, true);
        if (costs_ != nullptr && !costs_->port.empty()) {
            set_cost(id, costs_->port[rank]);  // a star's aggregation node is its switch
        }
        set_switch_alpha(id);
    }
    return id;
}

void link_table::set_switch_alpha(uint32_t id) {
    if (f_.alpha_switch_s < 0) {
        return;  // unset: α, as every other link
    }
    link_state& l  = links_[id];
    l.alpha_s      = f_.alpha_switch_s;
    l.alpha_units  = 0;
    l.switch_units = 1;
}

void link_table::inc_path(int rank, bool push, std::vector<hop>& out) {
    out.clear();
    // Unset α_switch keeps the single-port model's sharing of the switch port (bit-identical
    // to the runs before α_switch); set, the node is a device of its own on every fabric.
    if (mode_ == mode::single_port && f_.alpha_switch_s < 0) {
        out.push_back({static_cast<uint32_t>(2 * rank + (push ? 0 : 1)), 1});
        return;
    }
    out.push_back({agg_link(rank, push), 1});
}

std::string link_table::name(uint32_t id) const {
    const link_state& l = links_[id];
    std::string hub     = l.agg ? "agg" : "switch";
    std::string from    = l.from < 0 ? hub : std::to_string(l.from);
    std::string to      = l.to < 0 ? hub : std::to_string(l.to);
    return from + "->" + to;
}

}  // namespace loom::sim::detail
