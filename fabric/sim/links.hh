// SPDX-License-Identifier: Apache-2.0
// Internal to fabric/sim: the links of the modeled fabric and the path of every transfer
// (sim.hh "Paths"). A link is one direction of a full-duplex cable.
//
// Ids. Lattices: link (rank, dim, way) = rank·2k + 2·dim + way (way 0 toward +, 1 toward −;
// a wrapping dimension of size 2 has one link per direction, way 0). Single port: 2·rank
// (rank → switch) and 2·rank + 1 (switch → rank). Per-edge: created on first use, one per
// ordered pair. Aggregation-node links follow all of these (or, with α_switch unset, are
// the switch ports under single-port).
//
// Costs. Every link carries its own α, rate (efficiency·BW) and α units (its α in units of
// fabric::alpha_s, for n_alpha): the fabric's uniform values, or per_link's (sim.hh).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hh"
#include "open_table.hh"
#include "sim.hh"

namespace loom::sim::detail {

/// Where a transfer's time comes from, as parts (sim.hh "Observed costs").
struct stamp {
    double t           = 0;
    double hops        = 0;  // α units
    double switch_hops = 0;  // α_switch units (aggregation hops when α_switch is set)
    double beta_s      = 0;  // seconds of bytes
    double other       = 0;  // γ, ALU
};

struct hop {
    uint32_t link;
    uint32_t alpha_units;  // 1: this hop pays α; 0: it does not (switch → rank)
};

struct link_state {
    stamp free;  // when the last reservation ends
    double alpha_s      = 0;
    double rate         = 1;  // efficiency·BW, bytes/s
    double alpha_units  = 1;  // alpha_s / fabric::alpha_s (1 when that is 0)
    double switch_units = 0;  // α_switch units per hop: 1 on aggregation links when set
    int32_t owner_rank  = -1;
    uint32_t owner_step = 0;
    uint32_t owner_wait = UINT32_MAX;  // the owner's last wait before it took this link
    int64_t bytes       = 0;
    int64_t messages    = 0;
    double busy_s       = 0;
    int32_t from        = -1;  // for names; -1: the switch or the aggregation node
    int32_t to          = -1;
    bool agg            = false;
};

class link_table {
  public:
    status init(const fabric& f, int nranks);
    /// The hops of a transfer src → dst (src != dst), appended to `out` (cleared first).
    void path(int src, int dst, std::vector<hop>& out);
    /// inc_push (rank → aggregation node) or inc_pull (node → rank).
    void inc_path(int rank, bool push, std::vector<hop>& out);

    /// The most hops a path() can have (per-edge 1, single-port 2, lattices the longest
    /// dimension-ordered route); inc paths have one.
    uint32_t max_hops() const;

    link_state& operator[](uint32_t id) { return links_[id]; }
    const std::vector<link_state>& all() const { return links_; }
    std::string name(uint32_t id) const;

  private:
    enum class mode { per_edge, single_port, lattice };
    uint32_t add(int32_t from, int32_t to, bool agg);
    uint32_t agg_link(int rank, bool up);
    /// With α_switch set, an aggregation link pays it (and counts it) instead of α.
    void set_switch_alpha(uint32_t id);
    /// Sets link `id`'s α and rate from `c` (add() gives every link the uniform values).
    void set_cost(uint32_t id, const link_costs::cost& c);
    /// per_link's cost of the link between two ranks; null when it has none.
    const link_costs::cost* pair_cost(int a, int b) const;

    mode mode_ = mode::per_edge;
    int n_     = 0;
    fabric f_;
    const link_costs* costs_ = nullptr;  // f_.per_link, or null (uniform)
    std::vector<int> dims_, stride_;
    bool wraps_ = false;
    std::vector<link_state> links_;
    open_table<uint64_t, uint32_t> pair_;  // per-edge: (src << 32 | dst) → link
    std::vector<uint32_t> agg_;            // aggregation links (2 per rank), created lazily
};

}  // namespace loom::sim::detail
