#include "log.hh"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "log_params.hh"

namespace loom::log {
namespace {

// -1 means "not read from the registry yet". Relaxed is enough: the value is a setting,
// not a synchronisation point, and a racing first read computes the same number.
std::atomic<int> g_threshold{-1};
std::atomic<uint32_t> g_mask{~0u};

const char* level_name(level l) {
    switch (l) {
        case level::error:
            return "ERROR";
        case level::warn:
            return "WARN";
        case level::info:
            return "INFO";
        case level::debug:
            return "DEBUG";
        case level::trace:
            return "TRACE";
    }
    return "?";
}

const char* subsystem_name(subsystem s) {
    switch (s) {
        case subsystem::init:
            return "init";
        case subsystem::coll:
            return "coll";
        case subsystem::net:
            return "net";
        case subsystem::inc:
            return "inc";
        case subsystem::sim:
            return "sim";
        case subsystem::ctl:
            return "ctl";
        case subsystem::sched:
            return "sched";
        case subsystem::tune:
            return "tune";
    }
    return "?";
}

int load_threshold() {
    auto value                 = params::level.get();
    static const char* names[] = {"error", "warn", "info", "debug", "trace"};
    for (int i = 0; i < 5; ++i) {
        if (value == names[i]) {
            return i;
        }
    }
    return static_cast<int>(level::warn);
}

}  // namespace

level threshold() {
    int t = g_threshold.load(std::memory_order_relaxed);
    if (t < 0) {
        t = load_threshold();
        g_threshold.store(t, std::memory_order_relaxed);
    }
    return static_cast<level>(t);
}

void set_threshold(level l) {
    g_threshold.store(static_cast<int>(l), std::memory_order_relaxed);
}
void set_subsystem_mask(uint32_t mask) {
    g_mask.store(mask, std::memory_order_relaxed);
}

bool enabled(level l, subsystem s) {
    return static_cast<int>(l) <= static_cast<int>(threshold()) &&
           (g_mask.load(std::memory_order_relaxed) & static_cast<uint32_t>(s)) != 0;
}

void write(level l, subsystem s, const char* fmt, ...) {
    char line[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    std::fprintf(stderr, "loom %s %s: %s\n", level_name(l), subsystem_name(s), line);
}

}  // namespace loom::log
