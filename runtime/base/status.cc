#include "status.hh"

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

extern "C" const char* loom_status_string(loom_status_t status) {
    switch (status) {
        case LOOM_SUCCESS:
            return "success";
        case LOOM_IN_PROGRESS:
            return "in progress";
        case LOOM_ERR_INVALID_ARGUMENT:
            return "invalid argument";
        case LOOM_ERR_MISMATCH:
            return "mismatch across ranks";
        case LOOM_ERR_PEER_FAILURE:
            return "peer failure";
        case LOOM_ERR_TIMEOUT:
            return "timeout";
        case LOOM_ERR_NO_RESOURCE:
            return "resource exhausted";
        case LOOM_ERR_SYSTEM:
            return "system error";
        case LOOM_ERR_INTERNAL:
            return "internal error";
        case LOOM_ERR_NOT_SUPPORTED:
            return "not supported";
        case LOOM_ERR_NOT_APPLICABLE:
            return "not applicable";
        case LOOM_ERR_PARSE:
            return "parse error";
        case LOOM_ERR_VERIFY:
            return "verification failed";
    }
    return "unknown status";
}

extern "C" size_t loom_dtype_size(loom_dtype_t dtype) {
    switch (dtype) {
        case LOOM_INT8:
        case LOOM_UINT8:
            return 1;
        case LOOM_FLOAT16:
        case LOOM_BFLOAT16:
            return 2;
        case LOOM_INT32:
        case LOOM_UINT32:
        case LOOM_FLOAT32:
            return 4;
        case LOOM_INT64:
        case LOOM_UINT64:
        case LOOM_FLOAT64:
            return 8;
        case LOOM_DTYPE_COUNT:
            break;
    }
    return 0;
}

extern "C" const char* loom_version(void) {
    return LOOM_VERSION;
}
extern "C" const char* loom_build_features(void) {
    return LOOM_FEATURES;
}
