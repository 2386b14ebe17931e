// SPDX-License-Identifier: Apache-2.0
// Logging by level and subsystem, to stderr. LOOM_LOG_LEVEL sets the level; at debug and
// trace, LOOM_LOG_SUBSYSTEMS (a comma list, default all) picks the subsystems shown, while
// errors, warnings and info always show. Both are read once, from the parameter registry
// (log_params.hh). Off the hot path only: a disabled line costs a compare and a bit test.
//
// Every line has one fixed form, fields separated by single spaces, so grep and log
// collectors can split it:
//   2026-11-25T14:37:14.123456Z nodeA pid=4242 rank=3 loom WARN coll: message
// the UTC time with microseconds, the host, the process id, the rank (`-` until a world
// communicator of this process is created), the level and the subsystem.
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

/// LOOM_LOG_SUBSYSTEMS's choices: the subsystems' names in bit order, then `all`.
inline constexpr const char* subsystem_choices = "init|coll|net|inc|sim|ctl|sched|tune|all";

/// Current threshold (read once from the registry).
level threshold();
bool enabled(level l, subsystem s);

/// The rank the lines of this process name from now on (a world communicator's).
void set_rank(int rank);

/// printf-style; writes one line (the form above) to stderr with a single write, so lines
/// of threads and processes sharing the stream do not interleave.
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
