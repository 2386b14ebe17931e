// SPDX-License-Identifier: Apache-2.0
// A fabric: the nodes (endpoints, switches, DPUs) and the links between them, each link with
// its own class, α and BW. Where topology.hh says what shape the ranks form, a fabric says
// what is wired to what and how fast, which is what the simulator and the tuner's per-class
// calibration need (docs/architecture.md#executors, docs/architecture.md#how-data-moves step 2).
//
// Two ways to get one:
//   fabric_from_shape(shape, params)  every lattice/star/full-mesh link, one uniform class;
//   parse_fabric_json / load_fabric_file  a fabric file (format below), per-link α/BW;
//   load_fabric(text, params)        either: a path (ends in .json or holds a '/') or a shape.
//
// Fabric file (JSON, strict: an unknown key, a wrong type or a missing field is an error
// naming the node or link):
//   {"format": "loom-fabric", "version": 1,
//    "shape": "torus:2x2",                       optional: the lattice the ranks form
//    "classes": {"nvl": {"alpha": 1e-6, "bw": 25e9}},   optional per-class defaults
//    "nodes": [{"id": "h0", "kind": "endpoint", "rank": 0, "coords": [0, 0]},
//              {"id": "sw0", "kind": "switch", "in_network": true, "parent": "sw1"}, …],
//    "links": [{"a": "h0", "b": "sw0", "class": "nvl", "alpha": 1e-6, "bw": 25e9}, …]}
// alpha in seconds, bw in bytes/s (docs/references.md#units: decimal units). A link's alpha/bw may
// be left out when its class gives them. Endpoints carry a rank, switches never, DPUs may (a DPU
// that is a torus router for its rank); the ranks are 0..R-1, each exactly once. Only
// switches and DPUs have in_network (can aggregate, inc/) and a parent (aggregation trees).
// With a shape, R is its size and given coordinates must be the rank's row-major ones.
// Depends on runtime/base and topology.hh only.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.hh"
#include "topology.hh"

namespace loom::topology {

enum class node_kind { endpoint, switch_node, dpu };
/// "endpoint", "switch", "dpu" (the fabric file's names).
const char* node_kind_name(node_kind k);

struct node {
    std::string id;
    node_kind kind = node_kind::endpoint;
    int rank       = -1;      // -1: carries no rank (switches, DPUs that only forward)
    std::vector<int> coords;  // empty when not given
    bool in_network = false;  // can reduce and multicast (an aggregation node)
    int parent      = -1;     // index in fabric::nodes() of the next switch up, -1 for none
};

struct link {
    int a                 = -1;  // indices in fabric::nodes(); links are full duplex
    int b                 = -1;
    int link_class        = 0;  // index in fabric::classes()
    double alpha_s        = 0;
    double bw_bytes_per_s = 0;
};

/// What a shape's links get: one class, one α, one BW.
struct link_params {
    std::string link_class = "link";
    double alpha_s         = 1e-6;  // the tools' documented default: 1 µs per message
    double bw_bytes_per_s  = 25e9;  // and 25 GB/s per link
};

/// The most links a fabric holds (32 bytes each, so 2 GiB): a fullmesh or torus beyond it
/// is refused with a reason instead of exhausting memory.
constexpr int64_t max_fabric_links = int64_t{1} << 26;

class fabric {
  public:
    /// Checks the description (ranks 0..R-1 once each, the shape's size, coordinates,
    /// parents, link ends, α ≥ 0, BW > 0) and indexes it. Errors name the bad node or link.
    static result<fabric> make(std::vector<node> nodes, std::vector<link> links,
                               std::vector<std::string> classes, std::optional<shape> lattice);

    const std::vector<node>& nodes() const { return nodes_; }
    const std::vector<link>& links() const { return links_; }
    const std::vector<std::string>& classes() const { return classes_; }
    const std::string& class_name(const link& l) const { return classes_[l.link_class]; }
    /// The shape the ranks form, when the fabric came from one or its file names one.
    const std::optional<shape>& lattice() const { return lattice_; }

    int nranks() const { return static_cast<int>(rank_node_.size()); }
    /// The node that carries `rank` (0 <= rank < nranks()).
    int node_of_rank(int rank) const { return rank_node_[rank]; }
    /// The node named `id`; -1 if none.
    int find_node(std::string_view id) const;
    /// The links that end at `node`, in file order.
    std::span<const int> links_of(int node) const;
    /// The first link between two nodes (either way round); -1 if they are not wired.
    int link_between(int node_a, int node_b) const;
    /// The same for the nodes that carry two ranks.
    int link_between_ranks(int rank_a, int rank_b) const;

  private:
    void index();

    std::vector<node> nodes_;
    std::vector<link> links_;
    std::vector<std::string> classes_;
    std::optional<shape> lattice_;
    std::vector<int> rank_node_;
    std::unordered_map<std::string, int> by_id_;
    std::vector<int> adjacency_;     // link ids grouped by node (both ends)
    std::vector<int> adjacency_at_;  // node i's links are adjacency_[at[i] .. at[i+1])
};

/// Every link of the shape, each with `params`. Endpoints are "r<rank>" with their
/// coordinates; a star adds one switch "switch" that every endpoint links to; a full mesh
/// links every pair; a lattice links neighbours along each dimension (one link on a
/// dimension of size 2, none on size 1).
result<fabric> fabric_from_shape(const shape& s, const link_params& params = {});

/// A fabric file's text (format above); `origin` (a path) starts every error message.
result<fabric> parse_fabric_json(std::string_view text, std::string_view origin);
/// Reads and parses a fabric file.
result<fabric> load_fabric_file(const std::string& path);
/// True when `text` names a fabric file rather than a shape: it ends in ".json" or holds
/// a '/'.
bool names_fabric_file(std::string_view text);
/// A fabric file (names_fabric_file) is loaded; anything else is parsed as a shape and
/// gets `params` on every link.
result<fabric> load_fabric(std::string_view shape_or_path, const link_params& params = {});

}  // namespace loom::topology
