// SPDX-License-Identifier: Apache-2.0
#include "tuner/calibration_checks.hh"

#include <cmath>
#include <cstdio>

namespace loom::tuner {
namespace {

std::string number(double v, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g %s", v, unit);
    return buf;
}

bool within(double v, double lo, double hi) {
    return std::isfinite(v) && v >= lo && v <= hi;
}

// "2026-11-25T14:24:00Z" → seconds since the epoch; -1 when it is not that form.
std::time_t parse_utc(const std::string& text) {
    std::tm t{};
    char zone = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &t.tm_year, &t.tm_mon, &t.tm_mday,
                    &t.tm_hour, &t.tm_min, &t.tm_sec, &zone) != 7 ||
        zone != 'Z') {
        return -1;
    }
    t.tm_year -= 1900;
    t.tm_mon -= 1;
    return timegm(&t);
}

bool was_measured(const machine_params& p) {
    return p.measured || p.source == "measured";
}

}  // namespace

std::string implausible(const machine_params& p, double tcp_alpha_s,
                        const plausibility_limits& limits) {
    if (!within(p.alpha_s, min_alpha_s, max_alpha_s)) {
        return "alpha " + number(p.alpha_s * 1e6, "us") + " is outside " +
               number(min_alpha_s * 1e6, "us") + " .. " + number(max_alpha_s * 1e6, "us");
    }
    if (!within(p.bw_bytes_per_s, min_bytes_per_s, max_bytes_per_s)) {
        return "bandwidth " + number(p.bw_bytes_per_s / 1e9, "GB/s") + " is outside " +
               number(min_bytes_per_s / 1e9, "GB/s") + " .. " +
               number(max_bytes_per_s / 1e9, "GB/s");
    }
    if (p.reduce_bytes_per_s != 0 &&
        !within(p.reduce_bytes_per_s, min_bytes_per_s, max_bytes_per_s)) {
        return "reduction throughput " + number(p.reduce_bytes_per_s / 1e9, "GB/s") +
               " is outside " + number(min_bytes_per_s / 1e9, "GB/s") + " .. " +
               number(max_bytes_per_s / 1e9, "GB/s");
    }
    if (p.repeats > 1 && p.spread > limits.max_spread) {
        return "its " + std::to_string(p.repeats) + " estimates of alpha differ by " +
               number(p.spread * 100, "%") + " of their median (at most " +
               number(limits.max_spread * 100, "%") + ": the machine was noisy)";
    }
    if (p.transport == "shm" && tcp_alpha_s > 0 && p.alpha_s > tcp_alpha_s) {
        return "shared-memory alpha " + number(p.alpha_s * 1e6, "us") +
               " exceeds this host's tcp alpha " + number(tcp_alpha_s * 1e6, "us") +
               " (shared memory is never slower than the network: measured under load)";
    }
    return "";
}

std::string stale(const machine_params& p, std::time_t now, const plausibility_limits& limits) {
    if (!was_measured(p)) {
        return "";
    }
    std::time_t when = parse_utc(p.date);
    if (when < 0) {
        return "its date '" + p.date + "' is not YYYY-MM-DDTHH:MM:SSZ";
    }
    double age_days = std::difftime(now, when) / 86400;
    if (age_days < -1) {
        return "it is dated " + p.date + ", in the future";
    }
    if (age_days > limits.max_age_days) {
        char days[32];
        std::snprintf(days, sizeof days, "%.0f days", age_days);
        return "it was measured " + p.date + ", " + days + " ago (at most " +
               number(limits.max_age_days, "days") + ")";
    }
    return "";
}

std::string busy(const machine_params& p) {
    if (!was_measured(p) || p.load1 < 0 || p.cpus <= 0 || p.load1 <= p.cpus) {
        return "";
    }
    return "it was measured under load (load average " + number(p.load1, "on ") +
           std::to_string(p.cpus) + " CPUs)";
}

}  // namespace loom::tuner
