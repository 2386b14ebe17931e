// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the fabric_sim suites: a fabric with "generic" α and BW (no accidental
// ties between different mixes of α and bytes), simulating a call or a schedule with the
// failure text in the test's message, and the comparison with algorithms::predict().
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/sim.hh"
#include "sweep.hh"
#include "test_main.hh"
#include "value_or_fail.hh"

namespace loom::test {

/// α = 1.3 µs, BW = 7 GB/s: neither a round number nor a ratio that makes a hop worth a
/// whole number of bytes, so equal times mean equal mixes of α and bytes.
inline sim::fabric generic_fabric(algorithms::port_model ports = algorithms::port_model::per_edge) {
    sim::fabric f;
    f.alpha_s        = 1.3e-6;
    f.bw_bytes_per_s = 7e9;
    f.ports          = ports;
    return f;
}

/// |x - y| ≤ rel · max(|x|, |y|) (and exactly equal when both are 0).
inline bool close_to(double x, double y, double rel = 1e-9) {
    return std::fabs(x - y) <= rel * std::max(std::fabs(x), std::fabs(y));
}

inline std::string fmt(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.12g", x);
    return buf;
}

/// Simulates the call; fails the running test on an error.
inline sim::report simulate_call(const algorithms::algorithm& a, const algorithms::call& c,
                                 const sim::fabric& f) {
    auto r = sim::simulate(a, c, f);
    if (!r) {
        LOOM_FAIL(describe_call(a, c) + ": " + r.error().to_string());
    }
    return std::move(r).value();
}

inline std::string ports_name(const sim::fabric& f) {
    return std::string(algorithms::port_model_name(f.ports));
}

/// "" when the simulated time, n_alpha and n_beta equal algorithms::predict()'s under the
/// fabric's port model (relative error < 1e-9); else both sides.
inline std::string compare_with_closed_form(const algorithms::algorithm& a,
                                            const algorithms::call& c, const sim::fabric& f,
                                            sim::report* out = nullptr) {
    auto r = sim::simulate(a, c, f);
    if (!r) {
        return describe_call(a, c) + ": " + r.error().to_string();
    }
    double m      = r->payload_bytes;
    auto cost     = algorithms::predict(a, c, m, f.ports);
    double t      = cost.time_s(f.alpha_s, f.bw_bytes_per_s, m);
    bool time_ok  = close_to(r->time_s, t);
    bool parts_ok = close_to(r->n_alpha, cost.n_alpha) && close_to(r->n_beta, cost.n_beta);
    if (out != nullptr) {
        *out = *r;
    }
    if (time_ok && parts_ok) {
        return "";
    }
    return describe_call(a, c) + " " + ports_name(f) + ": simulated " + fmt(r->time_s) +
           " s (n_alpha " + fmt(r->n_alpha) + ", n_beta " + fmt(r->n_beta) + "), closed form " +
           fmt(t) + " s (n_alpha " + fmt(cost.n_alpha) + ", n_beta " + fmt(cost.n_beta) + ")";
}

/// Fails the test unless compare_with_closed_form() agrees.
inline void expect_closed_form(const algorithms::algorithm& a, const algorithms::call& c,
                               const sim::fabric& f) {
    std::string err = compare_with_closed_form(a, c, f);
    if (!err.empty()) {
        LOOM_FAIL(err);
    }
}

}  // namespace loom::test
