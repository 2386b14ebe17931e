// SPDX-License-Identifier: Apache-2.0
// Summaries of per-iteration times. The median is what the table's time column shows (one
// slow iteration, a preempted rank on a shared machine, moves the mean but not the median);
// p99 shows the tail.
#include <algorithm>
#include <cmath>

#include "bench.hh"

namespace loom::bench {
namespace {

// The q-quantile of sorted values, interpolating linearly between the order statistics at
// floor and ceil of q (n - 1) (numpy's default, so a script recomputes the same figure).
double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) {
        return 0;
    }
    double pos  = q * static_cast<double>(sorted.size() - 1);
    size_t lo   = static_cast<size_t>(std::floor(pos));
    size_t hi   = std::min(lo + 1, sorted.size() - 1);
    double frac = pos - static_cast<double>(lo);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

}  // namespace

summary summarize(std::vector<double>& times) {
    summary s;
    if (times.empty()) {
        return s;
    }
    std::sort(times.begin(), times.end());
    double sum = 0;
    for (double t : times) {
        sum += t;
    }
    s.mean = sum / static_cast<double>(times.size());
    s.p50  = quantile(times, 0.50);
    s.p99  = quantile(times, 0.99);
    return s;
}

}  // namespace loom::bench
