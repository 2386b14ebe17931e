// What the schedule fuzz targets do with a parsed schedule: what loom-sim verify does (the
// verifier must stand any schedule a parser accepts), then both printed forms must parse
// back to the same schedule.
#pragma once

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

}  // namespace loom::fuzz
