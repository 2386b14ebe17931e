// SPDX-License-Identifier: Apache-2.0
#include "census.hh"

#include <algorithm>

namespace loom::topology {
namespace {

// Neighbours a coordinate contributes along one dimension, as a histogram over the d
// coordinates: a ring 2 each (1 on size 2), an open line 1 at each end and 2 inside.
std::vector<int64_t> dimension_degrees(int d, bool wraps) {
    std::vector<int64_t> h(3, 0);
    if (d == 1) {
        h[0] = 1;
    } else if (wraps || d == 2) {
        h[std::min(d - 1, 2)] = d;
    } else {
        h[1] = 2;
        h[2] = d - 2;
    }
    return h;
}

}  // namespace

std::vector<int64_t> convolve(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out(a.size() + b.size() - 1, 0);
    for (size_t i = 0; i < a.size(); ++i) {
        for (size_t j = 0; j < b.size(); ++j) {
            out[i + j] += a[i] * b[j];
        }
    }
    return out;
}

int64_t link_count(const shape& s) {
    const int64_t n = s.size();
    if (s.type() == kind::star) {
        return n;
    }
    if (s.type() == kind::full_mesh) {
        return n * (n - 1) / 2;
    }
    int64_t total = 0;
    for (int d : s.dims()) {
        // Per line of d ranks: d - 1 links open, d closed, one when d = 2 either way.
        int64_t per_line = d < 2 ? 0 : (s.wraps() && d > 2 ? d : d - 1);
        total += n / d * per_line;
    }
    return total;
}

std::vector<int64_t> degree_histogram(const shape& s) {
    if (!s.is_lattice()) {
        std::vector<int64_t> h(s.size(), 0);
        h[s.size() - 1] = s.size();  // every rank reaches the N - 1 others directly
        return h;
    }
    std::vector<int64_t> h{1};
    for (int d : s.dims()) {
        h = convolve(h, dimension_degrees(d, s.wraps()));
    }
    while (h.size() > 1 && h.back() == 0) {
        h.pop_back();
    }
    return h;
}

}  // namespace loom::topology
