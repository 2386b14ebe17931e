// SPDX-License-Identifier: Apache-2.0
// The one size grammar of loom's tools (loom-bench -b/-e, loom-sim --bytes/--count): a
// whole number of bytes, optionally with a unit. K, M, G, T and KiB, MiB, GiB, TiB are
// 1024-based, as nccl-tests reads "-b 1K" and users paste its size lists; KB, MB, GB, TB are
// 1000-based, as the SI prefixes say; a bare trailing B means bytes. Units are
// case-insensitive ("1k", "1kib"). Beneath it, the tools' one reader of a number with a unit
// (loom-sim's times and rates use it with their own unit tables).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.hh"

namespace loom::tools {

/// What --help says about sizes (one line).
inline constexpr const char* size_grammar_help =
    "bytes, or K/M/G/T (1024-based, also KiB...), KB/MB/GB/TB (1000-based)";

/// The largest size accepted: far beyond any buffer, still exact in int64.
inline constexpr int64_t max_size_bytes = int64_t{1} << 62;

/// A unit a number may carry and what it multiplies the number by.
struct unit {
    std::string_view name;
    double factor;
};

/// How a unit is matched, and what a message lists as allowed.
struct unit_rules {
    bool exact_case       = false;  // rates keep bit and byte apart ("Gb" vs "GB")
    bool strip_per_second = false;  // "GB/s" also accepted as "GB"
    const char* allowed   = "";     // shown after "expected a number" and an unknown unit
};

/// A finite, non-negative number followed by an optional unit of `units`, as the number times
/// the unit's factor; on bad input an invalid_argument naming `flag`.
result<double> parse_with_unit(std::string_view flag, std::string_view text,
                               std::span<const unit> units, unit_rules rules);

/// The string between the first and last character that is not a blank or a tab.
std::string_view trim(std::string_view s);

/// `text` as bytes; on bad input an invalid_argument naming `flag` and what is allowed.
/// Whole and non-negative ("1.5K" is 1536 bytes; "0.5" is refused).
result<int64_t> parse_size(std::string_view flag, std::string_view text);

}  // namespace loom::tools
