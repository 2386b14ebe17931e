// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the schedule JSON reader (loom-sim verify --schedule FILE.json).
#include "schedule_check.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return loom::fuzz::check_input(data, size, loom::schedule::parse_json);
}
