// SPDX-License-Identifier: Apache-2.0
#include "status.hh"

#include <iterator>

#include "loom_config.h"

namespace loom {

std::string status::to_string() const {
    std::string text = loom_status_string(code_);
    if (!message_.empty()) {
        text += ": " + message_;
    }
    return text;
}

}  // namespace loom

// Both tables are indexed by the enum's value: loom.h numbers the codes and the dtypes from
// 0 without gaps, as stable ABI. A value from C outside the range gets the fallback.
extern "C" const char* loom_status_string(loom_status_t status) {
    static const char* const names[] = {
        "success",
        "in progress",
        "invalid argument",
        "mismatch across ranks",
        "peer failure",
        "timeout",
        "resource exhausted",
        "system error",
        "internal error",
        "not supported",
        "not applicable",
        "parse error",
        "verification failed",
    };
    static_assert(std::size(names) == LOOM_ERR_VERIFY + 1);
    auto code = static_cast<unsigned>(status);
    return code < std::size(names) ? names[code] : "unknown status";
}

extern "C" size_t loom_dtype_size(loom_dtype_t dtype) {
    // int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, float32, float64
    static constexpr size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    static_assert(std::size(sizes) == LOOM_DTYPE_COUNT);
    auto index = static_cast<unsigned>(dtype);
    return index < std::size(sizes) ? sizes[index] : 0;
}

extern "C" const char* loom_version(void) {
    return LOOM_VERSION;
}
extern "C" const char* loom_build_features(void) {
    return LOOM_FEATURES;
}
