// Logging by level and subsystem: the level from LOOM_LOG_LEVEL (the parameter registry);
// the subsystem names the line. Off the hot path only: a disabled level costs one compare.
#pragma once

#include <cstdint>

namespace loom::log {

enum class level : int { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

enum class subsystem : uint32_t {
    init  = 1u << 0,
    coll  = 1u << 1,
    net   = 1u << 2,
    inc   = 1u << 3,
    sim   = 1u << 4,
    ctl   = 1u << 5,
    sched = 1u << 6,
    tune  = 1u << 7,
};

/// Current threshold (read once from the registry).
level threshold();
bool enabled(level l, subsystem s);

/// printf-style; writes one line "loom <LEVEL> <subsys>: message" to stderr.
void write(level l, subsystem s, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

}  // namespace loom::log

#define LOOM_LOG_AT_(lvl, sub, ...)                    \
    do {                                               \
        if (::loom::log::enabled(lvl, sub)) {          \
            ::loom::log::write(lvl, sub, __VA_ARGS__); \
        }                                              \
    } while (0)
#define LOOM_LOG_ERROR(sub, ...) LOOM_LOG_AT_(::loom::log::level::error, sub, __VA_ARGS__)
#define LOOM_LOG_WARN(sub, ...) LOOM_LOG_AT_(::loom::log::level::warn, sub, __VA_ARGS__)
#define LOOM_LOG_INFO(sub, ...) LOOM_LOG_AT_(::loom::log::level::info, sub, __VA_ARGS__)
#define LOOM_LOG_DEBUG(sub, ...) LOOM_LOG_AT_(::loom::log::level::debug, sub, __VA_ARGS__)
