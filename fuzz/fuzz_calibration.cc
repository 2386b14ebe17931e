// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: a calibration file line (tuner::from_line, read for every
// communicator from LOOM_CALIBRATION_FILE or the cache). A line that parses must print
// (to_line) and parse back.
#include <string>

#include "tuner/calibration.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        auto p = loom::tuner::from_line(std::string_view(text).substr(start, end - start));
        if (p) {
            (void)loom::tuner::from_line(loom::tuner::to_line(*p));
        }
        start = end + 1;
    }
    return 0;
}
