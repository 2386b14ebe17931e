// SPDX-License-Identifier: Apache-2.0
#include "dor.hh"

#include <algorithm>
#include <cstdlib>

#include "topology/census.hh"
#include "topology/lines.hh"

namespace loom::routing {
namespace {

int wrap(int64_t a, int n) {
    return static_cast<int>(((a % n) + n) % n);
}

// One dimension of size n of the count. cross(x, way, k): how many (source, destination)
// coordinate pairs cross the link that leaves coordinate x in direction `way` (0: +, 1: −)
// as the k-th hop of their arc. That source is a = x ∓ (k-1), and it sends such an arc to
// every destination at least k hops away in that direction, so the count is the number of
// arc lengths ≥ k it sends that way: no table, O(1) per cell. On a wrapping dimension of
// size 2 both ways are one link, counted as way 0.
struct axis_model {
    int n;
    bool wraps;
    tie_rule ties;

    int maxlen() const { return wraps ? n / 2 : n - 1; }
    // The longest arc a source at `a` sends in direction `way`.
    int reach(int a, int way) const {
        if (!wraps) {
            return way == 0 ? n - 1 - a : a;
        }
        int r = (n - 1) / 2;  // the arcs shorter than the antipode
        if (n % 2 == 0) {
            bool plus = ties == tie_rule::toward_plus || a % 2 == 0;
            r += (way == 0) == plus ? 1 : 0;
        }
        return r;
    }
    int64_t cross(int x, int way, int k) const {
        if (wraps && n == 2) {
            return way == 0 && k == 1 ? 1 : 0;
        }
        int a = way == 0 ? x - (k - 1) : x + (k - 1);
        if (wraps) {
            a = wrap(a, n);
        } else if (a < 0 || a >= n) {
            return 0;
        }
        return std::max(0, reach(a, way) - k + 1);
    }
    // Chunks on the link over the whole all-to-all (per pair of the other coordinates).
    int64_t total(int x, int way) const {
        if (!wraps) {
            return way == 0 ? int64_t{n - 1 - x} * (x + 1) : int64_t{x} * (n - x);
        }
        int64_t t = 0;
        for (int k = 1; k <= maxlen(); ++k) {
            t += cross(x, way, k);
        }
        return t;
    }
    // Link positions whose loads can differ: on a wrapping dimension only the parity of x
    // matters (through the tie rule), on a mesh every x does.
    int positions() const { return wraps ? std::min(n, 2) : n; }
};

// Histogram over source coordinates s of the arc length s → v (ties do not change it).
std::vector<int64_t> distance_histogram(int n, bool wraps, int v) {
    std::vector<int64_t> h(wraps ? n / 2 + 1 : n, 0);
    for (int s = 0; s < n; ++s) {
        ++h[axis_arc(n, wraps, s, v, tie_rule::toward_plus).length];
    }
    return h;
}

// Raises per_round[t] to the largest load any dimension-`dim` link carries as hop t, given
// `prefix`: the histogram of hops already taken in the dimensions before `dim`.
void raise_wave(const axis_model& ax, const std::vector<int64_t>& prefix, int64_t mult,
                std::vector<int64_t>& per_round) {
    const int rounds = static_cast<int>(per_round.size()) - 1;
    // On a mesh cross() is constant in k up to a bound: sums of prefix do the inner loop.
    std::vector<int64_t> below(rounds + 2, 0);  // below[m] = Σ prefix[h], h < m
    for (int m = 1; m <= rounds + 1; ++m) {
        below[m] = below[m - 1] + (m - 1 < static_cast<int>(prefix.size()) ? prefix[m - 1] : 0);
    }
    for (int x = 0; x < ax.positions(); ++x) {
        for (int way = 0; way < 2; ++way) {
            for (int t = 1; t <= rounds; ++t) {
                int64_t load = 0;
                if (!ax.wraps) {
                    int kmax = way == 0 ? x + 1 : ax.n - x;  // hops k = 1..kmax cross
                    load     = ax.cross(x, way, 1) * (below[t] - below[std::max(0, t - kmax)]);
                } else {
                    for (int k = 1; k <= std::min(t, ax.maxlen()); ++k) {
                        size_t h = t - k;
                        load += h < prefix.size() ? ax.cross(x, way, k) * prefix[h] : 0;
                    }
                }
                per_round[t] = std::max(per_round[t], mult * load);
            }
        }
    }
}

// Every distinct prefix histogram of a mesh: coordinates v_j, j < dim, taken up to the
// mirror image (the histogram of v equals that of n-1-v).
std::vector<std::vector<int64_t>> mesh_prefixes(const std::vector<int>& dims, int dim) {
    std::vector<std::vector<int64_t>> out{{1}};
    for (int j = 0; j < dim; ++j) {
        int half = (dims[j] + 1) / 2;
        std::vector<std::vector<int64_t>> next;
        next.reserve(out.size() * half);
        for (const auto& h : out) {
            for (int v = 0; v < half; ++v) {
                next.push_back(topology::convolve(h, distance_histogram(dims[j], false, v)));
            }
        }
        out.swap(next);
    }
    return out;
}

// Elementary steps the wave count takes (raise_wave's loops plus the prefixes).
double wave_work(const topology::shape& s) {
    double work = 0, prefixes = 1;
    for (int i = 0; i < s.ndims(); ++i) {
        axis_model ax{s.dims()[i], s.wraps(), tie_rule::toward_plus};
        double per_t = s.wraps() ? ax.positions() * 2.0 * ax.maxlen() : ax.positions() * 2.0;
        work += prefixes * (per_t * s.diameter() + s.diameter());
        if (!s.wraps()) {
            prefixes *= (s.dims()[i] + 1) / 2;
        }
    }
    return work;
}

// For `at` and an axis p: its two neighbours along p (+, −), and for every destination that
// agrees with `at` up to and including axis p (indexed by u, its rank among the axes after
// p) the hops from `at` to it and the next rank on the way (-1 for `at` itself).
struct suffix_table {
    bool ready       = false;
    int neighbour[2] = {-1, -1};
    std::vector<int> hops, next;
};

suffix_table suffixes(const topology::shape& s, int at, int p, tie_rule ties) {
    suffix_table t;
    t.ready              = true;
    t.neighbour[0]       = s.neighbour(at, p, +1);
    t.neighbour[1]       = s.neighbour(at, p, -1);
    const int64_t stride = topology::dim_stride(s, p);
    const int64_t first  = at / stride * stride;
    t.hops.resize(stride);
    t.next.resize(stride);
    for (int64_t u = 0; u < stride; ++u) {
        int d     = static_cast<int>(first + u);
        t.hops[u] = s.hops(at, d);
        t.next[u] = next_hop(s, at, d, ties);
    }
    return t;
}

}  // namespace

std::string_view tie_rule_name(tie_rule t) {
    return t == tie_rule::toward_plus ? "toward-plus" : "source-parity";
}

bool parse_tie_rule(std::string_view text, tie_rule* out) {
    for (tie_rule t : {tie_rule::toward_plus, tie_rule::source_parity}) {
        if (text == tie_rule_name(t)) {
            *out = t;
            return true;
        }
    }
    return false;
}

arc axis_arc(int n, bool wraps, int from, int to, tie_rule ties) {
    if (from == to) {
        return {0, 0};
    }
    if (!wraps) {
        return {to > from ? 1 : -1, std::abs(to - from)};
    }
    int fwd = wrap(int64_t{to} - from, n), back = n - fwd;
    if (fwd != back) {
        return fwd < back ? arc{1, fwd} : arc{-1, back};
    }
    bool plus = ties == tie_rule::toward_plus || from % 2 == 0;
    return {plus ? 1 : -1, fwd};
}

int next_hop(const topology::shape& s, int at, int dst, tie_rule ties) {
    if (at == dst) {
        return -1;
    }
    if (!s.is_lattice()) {
        return dst;
    }
    auto ac = s.coords(at), dc = s.coords(dst);
    int i = 0;
    while (ac[i] == dc[i]) {
        ++i;
    }
    arc a = axis_arc(s.dims()[i], s.wraps(), ac[i], dc[i], ties);
    return s.neighbour(at, i, a.step);
}

std::vector<int> route(const topology::shape& s, int src, int dst, tie_rule ties) {
    std::vector<int> path{src};
    for (int at = src; at != dst;) {
        at = next_hop(s, at, dst, ties);
        path.push_back(at);
    }
    return path;
}

std::vector<transit> transits_through(const topology::shape& s, int at, tie_rule ties) {
    std::vector<transit> out;
    const int n_ranks = s.size();
    for (int d = 0; d < n_ranks; ++d) {
        if (d != at) {
            out.push_back({at, d, s.hops(at, d), 0, -1, next_hop(s, at, d, ties)});
        }
    }
    if (!s.is_lattice()) {
        for (int src = 0; src < n_ranks; ++src) {
            if (src != at) {
                out.push_back({src, at, 1, 1, src, -1});
            }
        }
        return out;
    }
    const auto& dims = s.dims();
    const auto rc    = s.coords(at);
    std::vector<suffix_table> tables(s.ndims());
    for (int src = 0; src < n_ranks; ++src) {
        if (src == at) {
            continue;
        }
        auto sc = s.coords(src);
        // `at` lies on src → dst only during the move along p, the last axis where they
        // differ: axes before p must already be dst's, axes after p are still src's.
        int p = s.ndims() - 1;
        while (rc[p] == sc[p]) {
            --p;
        }
        int base = 0;  // hops along the axes before p
        for (int j = 0; j < p; ++j) {
            base += axis_arc(dims[j], s.wraps(), sc[j], rc[j], ties).length;
        }
        const suffix_table& tail =
            tables[p].ready ? tables[p] : (tables[p] = suffixes(s, at, p, ties));
        const int64_t stride = static_cast<int64_t>(tail.hops.size());
        for (int e = 0; e < dims[p]; ++e) {
            arc a = axis_arc(dims[p], s.wraps(), sc[p], e, ties);
            int k = s.wraps() ? wrap(int64_t{rc[p] - sc[p]} * a.step, dims[p])
                              : (rc[p] - sc[p]) * a.step;
            if (a.step == 0 || k < 1 || k > a.length) {
                continue;
            }
            int prev   = tail.neighbour[a.step > 0 ? 1 : 0];
            int onward = k < a.length ? tail.neighbour[a.step > 0 ? 0 : 1] : -1;
            // Destinations: coordinates before p are at's, p is e, the rest any suffix u.
            int64_t first = (at / (stride * dims[p]) * dims[p] + e) * stride;
            for (int64_t u = 0; u < stride; ++u) {
                int next = onward >= 0 ? onward : tail.next[u];
                out.push_back({src, static_cast<int>(first + u), base + a.length + tail.hops[u],
                               base + k, prev, next});
            }
        }
    }
    return out;
}

all_to_all_load count_all_to_all(const topology::shape& s, tie_rule ties) {
    all_to_all_load load;
    const int64_t n_ranks = s.size();
    if (n_ranks < 2) {
        return load;
    }
    if (!s.is_lattice()) {
        return {1, 1, 1};  // every chunk on its own direct link
    }
    load.rounds = s.diameter();
    std::vector<int64_t> per_round(load.rounds + 1, 0);
    const bool count_wave = wave_work(s) <= static_cast<double>(wave_work_limit);
    const auto& dims      = s.dims();
    std::vector<int64_t> torus_prefix{1};  // on a torus the histogram does not depend on v
    for (int i = 0; i < s.ndims(); ++i) {
        axis_model ax{dims[i], s.wraps(), ties};
        if (ax.n >= 2) {
            for (int x = 0; x < ax.positions(); ++x) {
                for (int way = 0; way < 2; ++way) {
                    load.busiest_link =
                        std::max(load.busiest_link, n_ranks / ax.n * ax.total(x, way));
                }
            }
            int64_t mult = topology::dim_stride(s, i);
            if (count_wave && s.wraps()) {
                raise_wave(ax, torus_prefix, mult, per_round);
            } else if (count_wave) {
                for (const auto& h : mesh_prefixes(dims, i)) {
                    raise_wave(ax, h, mult, per_round);
                }
            }
        }
        if (count_wave && s.wraps()) {
            torus_prefix = topology::convolve(torus_prefix, distance_histogram(ax.n, true, 0));
        }
    }
    load.wave = 0;
    for (int64_t v : per_round) {
        load.wave += v;
    }
    if (!count_wave) {
        load.wave = -1;
    }
    return load;
}

}  // namespace loom::routing
