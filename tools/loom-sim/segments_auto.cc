// SPDX-License-Identifier: Apache-2.0
// loom-sim --segments auto: the pipeline depth P of least predicted time, per algorithm and
// size (predict, explain).
//
// The pipelined closed forms are all of one shape in P: (L+P-1)(α + M/(P·BW)) and its kin
// (binomial, double binary tree, in-network; docs/algorithms.md) expand to
//   t(P) = A + B·P + C/P,
// whose optimum is P* = √(C/B). Three evaluations (P = 1, 2, 4) give A, B and C exactly for
// such a form; P* is then checked against its integer neighbours by evaluating the real cost
// there, so a form that is not of that shape (a routed lattice count, a floor in the
// single-port bounds) is still judged by its own numbers, never by the fit. An algorithm
// that ignores P has B = C = 0 and keeps P = 1; ties keep the smaller P (fewer messages).
#include <algorithm>
#include <cmath>
#include <map>

#include "loom_sim.hh"

namespace loom::sim_tool {

int auto_segments_cap(const algorithms::call& c) {
    // A segment holds at least one element, and a call takes at most max_auto_segments.
    return static_cast<int>(std::clamp<int64_t>(c.count, 1, max_auto_segments));
}

segment_choice best_segments(int cap, const std::function<std::optional<double>(int)>& time_at) {
    std::map<int, std::optional<double>> times;  // each P costed once
    auto at = [&](int p) -> std::optional<double> {
        if (p < 1 || p > cap) {
            return std::nullopt;
        }
        auto [it, fresh] = times.try_emplace(p);
        if (fresh) {
            it->second = time_at(p);
        }
        return it->second;
    };
    at(1);
    if (cap < 8) {
        for (int p = 2; p <= cap; ++p) {
            at(p);
        }
    } else if (auto t1 = at(1), t2 = at(2), t4 = at(4); t1 && t2 && t4) {
        // t2 - t1 = B - C/2 and t4 - t2 = 2B - C/4.
        const double d1 = *t2 - *t1, d2 = *t4 - *t2;
        const double c = 4 * (d2 - 2 * d1) / 3;
        const double b = d1 + c / 2;
        double p_star  = 1;
        if (c > 0) {
            p_star = b > 0 ? std::sqrt(c / b) : static_cast<double>(cap);
        }
        p_star          = std::clamp(p_star, 1.0, static_cast<double>(cap));
        const int below = static_cast<int>(std::floor(p_star));
        for (int p = below - 1; p <= below + 2; ++p) {  // two integer neighbours each side
            at(p);
        }
        at(cap);
    }
    // The least time; ties (equal forms, 1e-12 absorbs rounding) keep the smaller P.
    segment_choice best;
    for (const auto& [p, t] : times) {
        if (t && (best.segments == 0 || *t < best.time_s * (1 - 1e-12))) {
            best = {p, *t};
        }
    }
    return best;
}

}  // namespace loom::sim_tool
