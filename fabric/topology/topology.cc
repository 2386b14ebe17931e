// SPDX-License-Identifier: Apache-2.0
#include "topology.hh"
#include "base/check.hh"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <map>

namespace loom::topology {
namespace {

// Upper bound on ranks: a schedule is generated per rank, so this is about int overflow
// in products of dimensions, not memory.
constexpr int64_t max_ranks = 1 << 24;

result<int> parse_positive(std::string_view text, std::string_view whole) {
    int value      = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value <= 0) {
        return parse_error("topology '" + std::string(whole) + "': '" + std::string(text) +
                           "' is not a positive integer");
    }
    return value;
}

// Links cut by a balanced split of a lattice with these dimensions (sorted, all > 1), the
// cheapest cut across one dimension i. Each line along i is cut once (open line, 2-ring) or
// twice (ring). With d_i even a straight cut halves every line. With d_i odd a line splits
// ⌊d_i/2⌋ / ⌈d_i/2⌉, so half the lines must put the extra rank on the other side: a
// one-step staircase, whose step costs the balanced bisection of the other dimensions
// (mesh 2x5: 2 + 1 = 3 beats the straight cut's 5). Exact against brute force on every
// shape the tests try; the multiset of dimensions is memoised.
int64_t lattice_bisection(const std::vector<int>& dims, bool wraps,
                          std::map<std::vector<int>, int64_t>& memo) {
    if (dims.empty()) {
        return 0;
    }
    if (auto it = memo.find(dims); it != memo.end()) {
        return it->second;
    }
    int64_t n = 1;
    for (int d : dims) {
        n *= d;
    }
    int64_t best = -1;
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i > 0 && dims[i] == dims[i - 1]) {
            continue;  // same size, same cut
        }
        const int d = dims[i];
        int64_t cut = n / d * ((wraps && d > 2) ? 2 : 1);
        if (d % 2 != 0) {
            std::vector<int> rest = dims;
            rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
            cut += lattice_bisection(rest, wraps, memo);
        }
        best = best < 0 ? cut : std::min(best, cut);
    }
    return memo[dims] = best;
}

}  // namespace

const char* kind_name(kind k) {
    switch (k) {
        case kind::star:
            return "star";
        case kind::ring:
            return "ring";
        case kind::torus:
            return "torus";
        case kind::mesh:
            return "mesh";
        case kind::full_mesh:
            return "fullmesh";
    }
    return "?";
}

shape shape::star(int n) {
    shape s;
    s.kind_ = kind::star;
    s.dims_ = {n};
    s.size_ = n;
    return s;
}

result<shape> shape::parse(std::string_view text) {
    auto colon = text.find(':');
    if (colon == std::string_view::npos) {
        return parse_error("topology '" + std::string(text) +
                           "': expected KIND:SIZE, e.g. star:8, ring:8, torus:4x4x2, mesh:3x5, "
                           "fullmesh:8");
    }
    std::string_view name = text.substr(0, colon);
    std::string_view body = text.substr(colon + 1);
    const kind kinds[]    = {kind::star, kind::ring, kind::torus, kind::mesh, kind::full_mesh};
    const auto* found     = std::find_if(std::begin(kinds), std::end(kinds), [&](kind k) {
        return name == kind_name(k) || (k == kind::full_mesh && name == "full_mesh");
    });
    if (found == std::end(kinds)) {
        return parse_error("topology '" + std::string(text) + "': unknown kind '" +
                           std::string(name) + "' (star, ring, torus, mesh, fullmesh)");
    }
    shape s;
    s.kind_      = *found;
    bool multi   = s.kind_ == kind::torus || s.kind_ == kind::mesh;
    int64_t size = 1;
    size_t pos   = 0;
    while (pos <= body.size()) {
        size_t x              = body.find('x', pos);
        std::string_view part = body.substr(pos, x == std::string_view::npos ? body.npos : x - pos);
        LOOM_ASSIGN(s.dims_.emplace_back(), parse_positive(part, text));
        size *= s.dims_.back();
        if (size > max_ranks) {
            return parse_error("topology '" + std::string(text) + "': more than " +
                               std::to_string(max_ranks) + " ranks");
        }
        if (x == std::string_view::npos) {
            break;
        }
        pos = x + 1;
    }
    if (!multi && s.dims_.size() != 1) {
        return parse_error("topology '" + std::string(text) + "': " + std::string(name) +
                           " takes one size, e.g. " + std::string(name) + ":8");
    }
    s.size_ = static_cast<int>(size);
    return s;
}

std::vector<int> shape::coords(int rank) const {
    std::vector<int> c(dims_.size());
    for (int i = ndims() - 1; i >= 0; --i) {
        c[i] = rank % dims_[i];
        rank /= dims_[i];
    }
    return c;
}

int shape::rank_of(const std::vector<int>& c) const {
    int rank = 0;
    for (int i = 0; i < ndims(); ++i) {
        rank = rank * dims_[i] + c[i];
    }
    return rank;
}

int shape::neighbour(int rank, int dim, int step) const {
    auto c = coords(rank);
    int d  = dims_[dim];
    int v  = c[dim] + step;
    if (wraps() || !is_lattice()) {
        v = ((v % d) + d) % d;
    } else if (v < 0 || v >= d) {
        return -1;
    }
    c[dim] = v;
    return rank_of(c);
}

std::vector<int> shape::neighbours(int rank) const {
    std::vector<int> out;
    if (!is_lattice()) {
        for (int r = 0; r < size_; ++r) {
            if (r != rank) {
                out.push_back(r);
            }
        }
        return out;
    }
    for (int dim = 0; dim < ndims(); ++dim) {
        for (int step : {+1, -1}) {
            int n = neighbour(rank, dim, step);
            if (n >= 0 && n != rank && std::find(out.begin(), out.end(), n) == out.end()) {
                out.push_back(n);
            }
        }
    }
    return out;
}

int shape::hops(int a, int b) const {
    if (a == b) {
        return 0;
    }
    if (!is_lattice()) {
        return 1;
    }
    auto ca = coords(a), cb = coords(b);
    int total = 0;
    for (int i = 0; i < ndims(); ++i) {
        int dx = std::abs(ca[i] - cb[i]);
        total += wraps() ? std::min(dx, dims_[i] - dx) : dx;
    }
    return total;
}

int shape::diameter() const {
    if (!is_lattice()) {
        return size_ > 1 ? 1 : 0;
    }
    int total = 0;
    for (int d : dims_) {
        total += wraps() ? d / 2 : d - 1;
    }
    return total;
}

int shape::diameter_links() const {
    return kind_ == kind::star && size_ > 1 ? 2 : diameter();
}

int shape::max_dim() const {
    return *std::max_element(dims_.begin(), dims_.end());
}

int64_t shape::bisection_links() const {
    int64_t n = size_;
    if (kind_ == kind::star) {
        return n / 2;  // one port per rank: half the ports cross any balanced cut
    }
    if (kind_ == kind::full_mesh) {
        return (n / 2) * (n - n / 2);
    }
    // A dimension of size 1 has no links and changes no cut.
    std::vector<int> dims;
    std::copy_if(dims_.begin(), dims_.end(), std::back_inserter(dims), [](int d) { return d > 1; });
    std::sort(dims.begin(), dims.end());
    std::map<std::vector<int>, int64_t> memo;
    return lattice_bisection(dims, wraps(), memo);
}

std::string shape::to_string() const {
    std::string out = kind_name(kind_);
    out += ':';
    for (size_t i = 0; i < dims_.size(); ++i) {
        if (i) {
            out += 'x';
        }
        out += std::to_string(dims_[i]);
    }
    return out;
}

std::string shape::rank_label(int rank) const {
    std::string out = std::to_string(rank);
    if (is_lattice()) {
        const auto c = coords(rank);
        for (size_t i = 0; i < c.size(); ++i) {
            out += (i ? "," : "(") + std::to_string(c[i]);
        }
        out += ")";
    }
    return out;
}

}  // namespace loom::topology
