// SPDX-License-Identifier: Apache-2.0
// loom-sim topology: what a fabric looks like and how a chunk crosses it.
//
//   loom-sim topology T [--route A B] [--ties toward-plus|source-parity] [--json]
//
// T is a shape (torus:4x4) or a fabric file (names_fabric_file: *.json or a path). Shown:
// ranks, links, diameter, bisection, the lines of each dimension, and the neighbours of
// every rank up to text_rank_limit ranks (a count of ranks per neighbour number beyond);
// for a file, its nodes and link classes too. --route prints the dimension-ordered route
// with each hop's port and dateline VC (and, from a file, the link it takes). Every number
// comes from fabric/topology and fabric/routing.
#include <iostream>
#include <memory>
#include <optional>

#include "base/check.hh"
#include "loom_sim.hh"
#include "routing/dateline.hh"
#include "topology/census.hh"
#include "topology/fabric.hh"
#include "topology/lines.hh"

namespace loom::sim_tool {
namespace {

using nlohmann::json;

// Beyond these the per-rank neighbour lists would drown the summary (text) or the output
// (JSON); the counts per neighbour number are shown instead.
constexpr int text_rank_limit = 64;
constexpr int json_rank_limit = 4096;

struct topology_flags {
    std::string target;
    std::vector<std::string> route;
    std::string ties = "toward-plus";
    bool json        = false;
};

// What T named: a file's fabric and/or a shape (a file names one optionally).
struct view {
    std::optional<topology::fabric> file;
    std::optional<topology::shape> lattice;
};

result<view> load_view(const std::string& target) {
    view v;
    if (topology::names_fabric_file(target)) {
        LOOM_ASSIGN(v.file, topology::load_fabric_file(target));
        v.lattice = v.file->lattice();
        return v;
    }
    auto s = topology::shape::parse(target);
    if (!s) {
        return invalid_argument(s.error().message() +
                                " (forms: star:N, ring:N, torus:4x4x2, mesh:3x5, fullmesh:N, "
                                "or a fabric file *.json)");
    }
    v.lattice = *s;
    return v;
}

struct route_query {
    int src = 0, dst = 0;
    routing::tie_rule ties = routing::tie_rule::toward_plus;
};

result<route_query> parse_route(const topology_flags& f, const view& v) {
    route_query q;
    if (!routing::parse_tie_rule(f.ties, &q.ties)) {
        return invalid_argument("--ties: unknown tie rule '" + f.ties +
                                "' (allowed: toward-plus, source-parity)");
    }
    if (!v.lattice) {
        return invalid_argument("--route: fabric file '" + f.target +
                                "' names no \"shape\", and routes are computed on one");
    }
    const int n = v.lattice->size();
    int* ends[] = {&q.src, &q.dst};
    for (int k = 0; k < 2; ++k) {
        LOOM_ASSIGN(int64_t r, parse_integer("--route", f.route[k], INT32_MIN, INT32_MAX));
        if (r < 0 || r >= n) {
            return invalid_argument("--route: rank " + f.route[k] + " is outside " +
                                    v.lattice->to_string() + " (ranks 0.." + std::to_string(n - 1) +
                                    ")");
        }
        *ends[k] = static_cast<int>(r);
    }
    return q;
}

std::string plural(int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "4 ranks have 2, 8 have 3": the neighbour-count histogram in words.
std::string degree_text(const std::vector<int64_t>& h) {
    std::string out;
    for (size_t k = 0; k < h.size(); ++k) {
        if (h[k] > 0) {
            out += std::string(out.empty() ? "" : ", ") + std::to_string(h[k]) +
                   (out.empty() ? (h[k] == 1 ? " rank has " : " ranks have ") : " have ") +
                   std::to_string(k);
        }
    }
    return out;
}

// "dimension 0: 4 rings of 4": how many lines of each dimension there are and whether they
// close into rings (topology::dim_closes), text and JSON alike.
struct dimension_lines {
    int dim = 0, size = 0, count = 0;
    bool ring = false;
};

std::vector<dimension_lines> lines_per_dimension(const topology::shape& s) {
    std::vector<dimension_lines> out;
    if (!s.is_lattice()) {
        return out;
    }
    for (int dim = 0; dim < s.ndims(); ++dim) {
        const int d = s.dims()[dim];
        out.push_back({dim, d, s.size() / d, topology::dim_closes(s, dim)});
    }
    return out;
}

// "1 hop between ranks, 2 links (rank -> switch -> rank)" on a star; "4 hops" elsewhere,
// where a hop is one link.
std::string diameter_text(const topology::shape& s) {
    if (s.diameter_links() != s.diameter()) {
        return plural(s.diameter(), "hop", "hops") + " between ranks, " +
               plural(s.diameter_links(), "link", "links") + " (rank -> switch -> rank)";
    }
    return plural(s.diameter(), "hop", "hops") + " (one link each)";
}

json shape_json(const topology::shape& s) {
    json j    = {{"topology", s.to_string()},
                 {"ranks", s.size()},
                 {"dims", s.dims()},
                 {"wraps", s.wraps()},
                 {"links", topology::link_count(s)},
                 {"diameter", s.diameter()},
                 {"diameter_rank_hops", s.diameter()},
                 {"diameter_links", s.diameter_links()},
                 {"bisection_links", s.bisection_links()}};
    json dims = json::array();
    for (const dimension_lines& l : lines_per_dimension(s)) {
        dims.push_back({{"dim", l.dim},
                        {"size", l.size},
                        {"lines", l.count},
                        {"kind", l.ring ? "ring" : "line"}});
    }
    j["dimensions"] = dims;
    json counts     = json::object();
    auto h          = topology::degree_histogram(s);
    for (size_t k = 0; k < h.size(); ++k) {
        if (h[k] > 0) {
            counts[std::to_string(k)] = h[k];
        }
    }
    j["neighbour_counts"] = counts;
    j["neighbour_census"] = degree_text(h);
    if (s.size() <= json_rank_limit) {
        json lists = json::array(), labels = json::array();
        for (int r = 0; r < s.size(); ++r) {
            lists.push_back(s.neighbours(r));
            labels.push_back(s.rank_label(r));
        }
        j["neighbours"] = lists;
        j["labels"]     = labels;
    }
    return j;
}

void print_shape(const topology::shape& s) {
    std::cout << s.to_string() << ": " << s.size() << (s.size() == 1 ? " rank" : " ranks") << ", "
              << topology::link_count(s) << " links\n"
              << "diameter: " << diameter_text(s) << '\n'
              << "bisection: " << s.bisection_links() << " links\n";
    for (const dimension_lines& l : lines_per_dimension(s)) {
        std::cout << "dimension " << l.dim << ": " << l.count << (l.ring ? " ring" : " line")
                  << (l.count == 1 ? "" : "s") << " of " << l.size << '\n';
    }
    std::cout << "neighbours: " << degree_text(topology::degree_histogram(s)) << '\n';
    if (s.size() > text_rank_limit) {
        std::cout << "(per-rank lists up to " << text_rank_limit << " ranks; --json lists up to "
                  << json_rank_limit << ")\n";
        return;
    }
    for (int r = 0; r < s.size(); ++r) {
        std::cout << "  " << s.rank_label(r) << ":";
        for (int q : s.neighbours(r)) {
            std::cout << ' ' << q;
        }
        std::cout << '\n';
    }
}

struct fabric_counts {
    int64_t by_kind[3] = {0, 0, 0};  // endpoint, switch, dpu
    int64_t in_network = 0;
    std::vector<int64_t> per_class;
};

fabric_counts count_fabric(const topology::fabric& f) {
    fabric_counts c;
    c.per_class.assign(f.classes().size(), 0);
    for (const auto& n : f.nodes()) {
        ++c.by_kind[static_cast<int>(n.kind)];
        c.in_network += n.in_network ? 1 : 0;
    }
    for (const auto& l : f.links()) {
        ++c.per_class[l.link_class];
    }
    return c;
}

json fabric_json(const topology::fabric& f, const std::string& path) {
    const fabric_counts c = count_fabric(f);
    json kinds = json::object(), classes = json::object();
    for (auto k : {topology::node_kind::endpoint, topology::node_kind::switch_node,
                   topology::node_kind::dpu}) {
        kinds[topology::node_kind_name(k)] = c.by_kind[static_cast<int>(k)];
    }
    for (size_t i = 0; i < f.classes().size(); ++i) {
        classes[f.classes()[i]] = c.per_class[i];
    }
    return {{"file", path},
            {"ranks", f.nranks()},
            {"nodes", kinds},
            {"in_network", c.in_network},
            {"links", f.links().size()},
            {"classes", classes}};
}

void print_fabric(const topology::fabric& f, const std::string& path) {
    const fabric_counts c = count_fabric(f);
    std::cout << "fabric file '" << path << "': " << plural(f.nodes().size(), "node", "nodes")
              << " (" << plural(c.by_kind[0], "endpoint", "endpoints") << ", "
              << plural(c.by_kind[1], "switch", "switches") << ", "
              << plural(c.by_kind[2], "DPU", "DPUs") << "; " << c.in_network << " in-network), "
              << plural(f.links().size(), "link", "links") << ", "
              << plural(f.nranks(), "rank", "ranks") << '\n';
    for (size_t i = 0; i < f.classes().size(); ++i) {
        std::cout << "  class " << f.classes()[i] << ": " << plural(c.per_class[i], "link", "links")
                  << '\n';
    }
}

// The file's link between a hop's ends, if they are wired directly (-1 otherwise, or for
// a shape, which has no file to name links from).
int hop_link(const view& v, const routing::hop& h) {
    return v.file ? v.file->link_between_ranks(h.from, h.to) : -1;
}

json hop_json(const view& v, const routing::hop& h) {
    json j = {{"from", h.from}, {"to", h.to},     {"dim", h.dim},
              {"step", h.step}, {"port", h.port}, {"vc", h.vc}};
    if (v.file) {
        const int id = hop_link(v, h);
        j["link"]    = id < 0 ? json(nullptr)
                              : json{{"id", id},
                                  {"class", v.file->class_name(v.file->links()[id])},
                                  {"alpha_s", v.file->links()[id].alpha_s},
                                  {"bw_bytes_per_s", v.file->links()[id].bw_bytes_per_s}};
    }
    return j;
}

std::string hop_text(const view& v, const routing::hop& h) {
    const auto& s   = *v.lattice;
    std::string out = s.rank_label(h.from) + " -> " + s.rank_label(h.to) + "  ";
    out += h.dim < 0 ? std::string("direct")
                     : "dim " + std::to_string(h.dim) + (h.step > 0 ? " +" : " -");
    out += "  port " + std::to_string(h.port) + "  vc" + std::to_string(h.vc);
    if (v.file) {
        const int id = hop_link(v, h);
        if (id < 0) {
            return out + "  (no direct link in the file)";
        }
        const auto& l = v.file->links()[id];
        out += "  link " + std::to_string(id) + " " + v.file->class_name(l) + ": alpha " +
               format_us(l.alpha_s) + " us, bw " + format_number(l.bw_bytes_per_s / 1e9) + " GB/s";
    }
    return out;
}

json route_json(const view& v, const route_query& q, const std::vector<routing::hop>& hops) {
    json list = json::array();
    for (const auto& h : hops) {
        list.push_back(hop_json(v, h));
    }
    return {{"src", q.src},
            {"dst", q.dst},
            {"ties", routing::tie_rule_name(q.ties)},
            {"vcs", routing::vc_policy_name(routing::vc_policy::dateline)},
            {"hops", list}};
}

void print_route(const view& v, const route_query& q, const std::vector<routing::hop>& hops) {
    std::cout << "route " << v.lattice->rank_label(q.src) << " -> " << v.lattice->rank_label(q.dst)
              << ": " << hops.size() << (hops.size() == 1 ? " hop" : " hops")
              << " (dimension-ordered, ties " << routing::tie_rule_name(q.ties)
              << ", dateline VCs)\n";
    for (size_t k = 0; k < hops.size(); ++k) {
        std::cout << "  " << k + 1 << ". " << hop_text(v, hops[k]) << '\n';
    }
}

status run_topology(const topology_flags& f) {
    LOOM_ASSIGN(view v, load_view(f.target));
    std::optional<route_query> q;
    if (!f.route.empty()) {
        LOOM_ASSIGN(q, parse_route(f, v));
    } else if (routing::tie_rule t; !routing::parse_tie_rule(f.ties, &t)) {
        return invalid_argument("--ties: unknown tie rule '" + f.ties +
                                "' (allowed: toward-plus, source-parity)");
    }
    std::vector<routing::hop> hops;
    if (q) {
        hops =
            routing::route_hops(*v.lattice, q->src, q->dst, q->ties, routing::vc_policy::dateline);
    }
    if (f.json) {
        json doc = v.lattice ? shape_json(*v.lattice) : json::object();
        if (v.file) {
            doc["fabric"] = fabric_json(*v.file, f.target);
        }
        if (q) {
            doc["route"] = route_json(v, *q, hops);
        }
        std::cout << doc.dump(2) << '\n';
        return status::ok();
    }
    if (v.file) {
        print_fabric(*v.file, f.target);
    }
    if (v.lattice) {
        print_shape(*v.lattice);
    }
    if (q) {
        print_route(v, *q, hops);
    }
    return status::ok();
}

}  // namespace

void add_topology_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto flags = std::make_shared<topology_flags>();
    CLI::App* cmd =
        app.add_subcommand("topology", "a fabric: neighbours, diameter, bisection, routes");
    cmd->add_option("topology", flags->target,
                    "a shape (star:N, ring:N, torus:4x4x2, mesh:3x5, fullmesh:N) or a fabric "
                    "file (*.json)")
        ->required()
        ->type_name("T");
    cmd->add_option("--route", flags->route,
                    "print the route from rank A to rank B: hops, ports, dateline VCs")
        ->expected(2)
        ->type_name("A B");
    cmd->add_option("--ties", flags->ties,
                    "antipodal ties on even rings: toward-plus (default) or source-parity")
        ->type_name("RULE");
    cmd->add_flag("--json", flags->json, "one JSON object");
    verbs.push_back({cmd, [flags] { return run_topology(*flags); }});
}

}  // namespace loom::sim_tool
