// SPDX-License-Identifier: Apache-2.0
#include "channel_graph.hh"

#include <algorithm>
#include <bit>

namespace loom::routing {
namespace {

// Channels are numbered (from · ports + port) · 2 + vc. A channel's successors all leave
// the rank it ends at, so they differ only in (port, vc): one 64-bit mask per channel holds
// its edges, deduplicated for free, which caps the check at 16 dimensions.
struct graph {
    const topology::shape& s;
    int ports = 0;
    std::vector<uint64_t> next;  // by channel id: bit port·2 + vc of the successors
    std::vector<char> used;

    int64_t id(int from, int port, int vc) const { return (int64_t{from} * ports + port) * 2 + vc; }
    channel decode(int64_t id) const {
        const int from = static_cast<int>(id / 2 / ports), port = static_cast<int>(id / 2 % ports);
        return {from, s.neighbour(from, port / 2, port % 2 ? -1 : +1), static_cast<int>(id % 2)};
    }
    int64_t successor(int64_t from_id, int bit) const {
        return id(decode(from_id).to, bit / 2, bit % 2);
    }
};

// Walks every route once, marking its channels and the edges between consecutive ones.
void add_routes(graph& g, tie_rule ties, vc_policy vcs) {
    const int n = g.s.size();
    for (int src = 0; src < n; ++src) {
        for (int dst = 0; dst < n; ++dst) {
            int64_t prev = -1;
            int dim = -1, vc = 0;
            for (int at = src; at != dst;) {
                hop h      = next_hop_vc(g.s, at, dst, dim, vc, ties, vcs);
                int64_t id = g.id(h.from, h.port, h.vc);
                g.used[id] = 1;
                if (prev >= 0) {
                    g.next[prev] |= uint64_t{1} << (h.port * 2 + h.vc);
                }
                prev = id;
                at   = h.to;
                dim  = h.dim;
                vc   = h.vc;
            }
        }
    }
}

// Depth-first search with an explicit stack (a ring of thousands of channels would overflow
// the call stack); a grey successor closes a cycle, read back off the stack.
std::vector<channel> find_cycle(const graph& g) {
    const int64_t count = static_cast<int64_t>(g.next.size());
    std::vector<char> colour(count, 0);  // 0 white, 1 grey (on the stack), 2 black
    struct frame {
        int64_t id;
        uint64_t left;  // successor bits not yet followed
    };
    std::vector<frame> stack;
    for (int64_t root = 0; root < count; ++root) {
        if (!g.used[root] || colour[root] != 0) {
            continue;
        }
        stack.push_back({root, g.next[root]});
        colour[root] = 1;
        while (!stack.empty()) {
            frame& f = stack.back();
            if (f.left == 0) {
                colour[f.id] = 2;
                stack.pop_back();
                continue;
            }
            const int bit = std::countr_zero(f.left);
            f.left &= f.left - 1;
            const int64_t v = g.successor(f.id, bit);
            if (colour[v] == 1) {
                std::vector<channel> cycle;
                size_t k = stack.size();
                while (stack[k - 1].id != v) {
                    --k;
                }
                for (; k <= stack.size(); ++k) {
                    cycle.push_back(g.decode(stack[k - 1].id));
                }
                return cycle;
            }
            if (colour[v] == 0) {
                colour[v] = 1;
                stack.push_back({v, g.next[v]});
            }
        }
    }
    return {};
}

}  // namespace

result<dependency_report> check_channel_dependencies(const topology::shape& s, tie_rule ties,
                                                     vc_policy vcs) {
    dependency_report r;
    const int64_t n = s.size();
    if (!s.is_lattice()) {
        // Every route is one hop (on a star, up to the switch and down: an up-link always
        // precedes a down-link, never the reverse), so nothing chains into a cycle.
        r.channels = n * (n - 1);
        return r;
    }
    if (s.ndims() > 16) {
        return not_supported("the dependency check handles up to 16 dimensions");
    }
    // In double: N²·diameter overflows int64 on the largest shapes parse() accepts.
    if (static_cast<double>(n) * n * std::max(1, s.diameter()) > max_dependency_work) {
        return not_supported(s.to_string() + " is too large for the dependency check (" +
                             std::to_string(n) + " ranks: N²·diameter route hops)");
    }
    graph g{s, 2 * s.ndims(), {}, {}};
    g.next.assign(n * g.ports * 2, 0);
    g.used.assign(g.next.size(), 0);
    add_routes(g, ties, vcs);
    for (size_t id = 0; id < g.next.size(); ++id) {
        r.channels += g.used[id];
        r.dependencies += std::popcount(g.next[id]);
    }
    r.cycle   = find_cycle(g);
    r.acyclic = r.cycle.empty();
    return r;
}

std::string describe_cycle(const topology::shape& s, const std::vector<channel>& cycle) {
    std::string out;
    for (const channel& c : cycle) {
        out += channel_name(s, c) + " => ";
    }
    return cycle.empty() ? "no cycle" : out + "back to " + channel_name(s, cycle.front());
}

}  // namespace loom::routing
