// SPDX-License-Identifier: Apache-2.0
// loom-sim options: flag text → library values, one clear message per kind of bad input.
//
// Units follow docs/architecture.md#conventions: sizes in bytes, times in seconds, rates in
// bytes per second. Sizes follow the tools' one grammar (tools/common/size_grammar.hh: K/M/G/T
// binary, KB/MB/GB/TB decimal). Rates are the other way round by habit of the field (a
// "25 GB/s" link is 25e9 bytes/s), so a rate must spell its unit out (GB/s, GiB/s, Gbit/s)
// rather than use a bare letter whose base would be a guess.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/check.hh"
#include "loom_sim.hh"
#include "tools/common/size_grammar.hh"

namespace loom::sim_tool {
namespace {

using tools::parse_with_unit;
using tools::trim;
using tools::unit;

constexpr unit time_units[] = {
    {"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}, {"ns", 1e-9},
};
// Each also accepted without its "/s".
constexpr unit rate_units[] = {
    {"", 1},
    {"B/s", 1},
    {"KB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"TB/s", 1e12},
    {"KiB/s", 0x1p10},
    {"MiB/s", 0x1p20},
    {"GiB/s", 0x1p30},
    {"TiB/s", 0x1p40},
    {"bit/s", 1.0 / 8},
    {"Kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Gbit/s", 1e9 / 8},
    {"Tbit/s", 1e12 / 8},
    {"Gbps", 1e9 / 8},
    {"Mbps", 1e6 / 8},
    {"Tbps", 1e12 / 8},
};

std::string quoted(std::string_view s) {
    return "'" + std::string(s) + "'";
}

}  // namespace

result<int64_t> parse_integer(std::string_view flag, std::string_view text, int64_t lo,
                              int64_t hi) {
    std::string_view s = trim(text);
    int64_t value      = 0;
    auto [end, ec]     = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size()) {
        return invalid_argument(std::string(flag) + ": expected an integer, got " + quoted(text));
    }
    if (ec == std::errc::result_out_of_range) {
        return invalid_argument(std::string(flag) + ": " + quoted(text) + " is out of range");
    }
    if (value < lo || value > hi) {
        // Counts and sizes have no useful upper bound to show; ranks such as --root do.
        std::string range = hi >= INT32_MAX
                                ? "must be at least " + std::to_string(lo)
                                : "must be in " + std::to_string(lo) + ".." + std::to_string(hi);
        if (value > hi && hi >= INT32_MAX) {
            range = "must be at most " + std::to_string(hi);
        }
        return invalid_argument(std::string(flag) + " " + range + ", got " + quoted(text));
    }
    return value;
}

result<int64_t> parse_size(std::string_view flag, std::string_view text) {
    return tools::parse_size(flag, text);
}

result<std::vector<int64_t>> parse_size_list(std::string_view flag, std::string_view text) {
    std::vector<int64_t> sizes;
    for (const std::string& item : split_list(text)) {
        LOOM_ASSIGN(sizes.emplace_back(), parse_size(flag, item));
    }
    if (sizes.empty()) {
        return invalid_argument(std::string(flag) + ": expected a size or a comma list, got " +
                                quoted(text));
    }
    return sizes;
}

result<double> parse_seconds(std::string_view flag, std::string_view text) {
    return parse_with_unit(flag, text, time_units,
                           {.exact_case = true, .allowed = "seconds, or s/ms/us/ns"});
}

result<double> parse_rate(std::string_view flag, std::string_view text) {
    auto v = parse_with_unit(flag, text, rate_units,
                             {.exact_case       = true,
                              .strip_per_second = true,
                              .allowed = "bytes/s, or B/s, KB/s, MB/s, GB/s, GiB/s, Gbit/s, Gbps"});
    if (v && *v <= 0) {
        return invalid_argument(std::string(flag) + " must be positive, got " + quoted(text));
    }
    return v;
}

result<double> parse_alpha_switch(std::string_view text) {
    if (text.empty()) {
        return -1.0;  // unset: the model's α on the aggregation node's hops too
    }
    return parse_seconds("--alpha-switch", text);
}

std::string alpha_switch_text(double alpha_switch_s) {
    return alpha_switch_s < 0 ? "" : ", α_switch = " + format_us(alpha_switch_s) + " µs";
}

void add_alpha_switch_option(CLI::App& cmd, std::string& text) {
    cmd.add_option("--alpha-switch", text,
                   "latency of a rank ↔ aggregation-node hop α_switch, for the in-network "
                   "algorithms (default: α)")
        ->type_name("S");
}

result<cost_model> parse_link_flags(const link_flags& f) {
    cost_model m;
    LOOM_ASSIGN(m.alpha_s, parse_seconds("--alpha", f.alpha.empty() ? "1us" : f.alpha));
    LOOM_ASSIGN(m.bw_bytes_per_s, parse_rate("--bw", f.bw.empty() ? "25GB/s" : f.bw));
    LOOM_ASSIGN(m.alpha_switch_s, parse_alpha_switch(f.alpha_switch));
    LOOM_ASSIGN(m.ports, parse_ports(f.ports));
    return m;
}

std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> items;
    std::string current;
    for (char ch : text) {
        if (ch == ',' || ch == ' ') {
            if (!current.empty()) {
                items.push_back(current);
            }
            current.clear();
        } else {
            current += ch;
        }
    }
    if (!current.empty()) {
        items.push_back(current);
    }
    return items;
}

std::string format_size(int64_t bytes) {
    static constexpr std::pair<const char*, int> binary[] = {
        {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}};
    static constexpr std::pair<const char*, int64_t> decimal[] = {
        {"TB", 1000000000000}, {"GB", 1000000000}, {"MB", 1000000}, {"KB", 1000}};
    if (bytes > 0) {
        for (auto [suffix, shift] : binary) {
            if (bytes % (int64_t{1} << shift) == 0) {
                return std::to_string(bytes >> shift) + suffix;
            }
        }
        for (auto [suffix, base] : decimal) {
            if (bytes % base == 0) {
                return std::to_string(bytes / base) + suffix;
            }
        }
    }
    return std::to_string(bytes) + "B";
}

std::string format_us(double seconds) {
    double us = seconds * 1e6;
    // Four significant digits up to 10 ms, then whole microseconds.
    const char* form = us < 10 ? "%.3f" : us < 100 ? "%.2f" : us < 10000 ? "%.1f" : "%.0f";
    char buf[64];
    std::snprintf(buf, sizeof buf, form, us);
    return buf;
}

std::string format_number(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", x);
    return buf;
}

result<algorithms::port_model> parse_ports(std::string_view text) {
    algorithms::port_model p;
    if (!algorithms::parse_port_model(text, &p)) {
        return invalid_argument("--port-model: unknown port model " + quoted(text) +
                                " (allowed: per-edge, single-port)");
    }
    return p;
}

}  // namespace loom::sim_tool
