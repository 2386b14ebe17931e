// SPDX-License-Identifier: Apache-2.0
// What the schedule fuzz targets do with a parsed schedule: what loom-sim verify does (the
// verifier must stand any schedule a parser accepts), then both printed forms must parse
// back to the same schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "schedule/schedule.hh"
#include "schedule/verifier.hh"

namespace loom::fuzz {

inline void check_parsed(const schedule::schedule& s) {
    schedule::verify_report report = schedule::verify(s);
    (void)report;
    auto text = schedule::parse_text(schedule::to_text(s));
    auto json = schedule::parse_json(schedule::to_json(s));
    if (!text || !json || !schedule::equal(*text, s) || !schedule::equal(*json, s)) {
        __builtin_trap();
    }
}

/// One fuzz input through `parse` (parse_text or parse_json); what it accepts goes on to
/// check_parsed.
template <typename Parser>
int check_input(const uint8_t* data, size_t size, Parser parse) {
    auto s = parse(std::string_view(reinterpret_cast<const char*>(data), size));
    if (s) {
        check_parsed(*s);
    }
    return 0;
}

}  // namespace loom::fuzz
