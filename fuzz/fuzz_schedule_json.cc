// libFuzzer target: the schedule JSON reader (loom-sim verify --schedule FILE.json).
#include <string_view>

#include "schedule_check.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto s =
        loom::schedule::parse_json(std::string_view(reinterpret_cast<const char*>(data), size));
    if (s) {
        loom::fuzz::check_parsed(*s);
    }
    return 0;
}
