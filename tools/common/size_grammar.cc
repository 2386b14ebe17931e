// SPDX-License-Identifier: Apache-2.0
// The size grammar (size_grammar.hh): a number, then an optional unit from one table.
#include "tools/common/size_grammar.hh"

#include <charconv>
#include <cmath>
#include <string>

#include "base/check.hh"

namespace loom::tools {
namespace {

constexpr unit size_units[] = {
    {"", 1},       {"B", 1},        {"K", 0x1p10},   {"KiB", 0x1p10}, {"KB", 1e3},
    {"M", 0x1p20}, {"MiB", 0x1p20}, {"MB", 1e6},     {"G", 0x1p30},   {"GiB", 0x1p30},
    {"GB", 1e9},   {"T", 0x1p40},   {"TiB", 0x1p40}, {"TB", 1e12},
};

bool iequal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; };
    for (size_t i = 0; i < a.size(); ++i) {
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

std::string quoted(std::string_view s) {
    return "'" + std::string(s) + "'";
}

}  // namespace

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t");
    return first == s.npos ? std::string_view{}
                           : s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

result<double> parse_with_unit(std::string_view flag, std::string_view text,
                               std::span<const unit> units, unit_rules rules) {
    const std::string name(flag);
    std::string_view s = trim(text);
    double value       = 0;
    auto [end, ec]     = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || s.empty()) {
        return invalid_argument(name + ": expected a number" +
                                (rules.allowed[0] ? std::string(" (") + rules.allowed + ")" : "") +
                                ", got " + quoted(text));
    }
    if (!std::isfinite(value)) {
        return invalid_argument(name + ": " + quoted(text) + " is not finite");
    }
    if (value < 0) {
        return invalid_argument(name + " must not be negative, got " + quoted(text));
    }
    std::string_view suffix = trim(s.substr(static_cast<size_t>(end - s.data())));
    for (const unit& u : units) {
        std::string_view unit_name = u.name;
        bool match = rules.exact_case ? suffix == unit_name : iequal(suffix, unit_name);
        if (!match && rules.strip_per_second && unit_name.size() > 2 && unit_name.ends_with("/s")) {
            unit_name.remove_suffix(2);
            match = suffix == unit_name;
        }
        if (match) {
            if (!std::isfinite(value * u.factor)) {  // 1e308 with a unit: past double
                return invalid_argument(name + ": " + quoted(text) + " is too large");
            }
            return value * u.factor;
        }
    }
    return invalid_argument(name + ": unknown unit " + quoted(suffix) + " in " + quoted(text) +
                            " (" + rules.allowed + ")");
}

result<int64_t> parse_size(std::string_view flag, std::string_view text) {
    LOOM_ASSIGN(double bytes,
                parse_with_unit(flag, text, size_units, {.allowed = size_grammar_help}));
    const std::string name(flag);
    if (!(bytes <= static_cast<double>(max_size_bytes))) {
        return invalid_argument(name + ": " + quoted(text) + " is too large");
    }
    if (std::floor(bytes) != bytes) {
        return invalid_argument(name + ": " + quoted(text) + " is not a whole number");
    }
    return static_cast<int64_t>(bytes);
}

}  // namespace loom::tools
