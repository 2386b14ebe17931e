#include "log.hh"

#include <atomic>
#include <bit>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "log_params.hh"

namespace loom::log {
namespace {

// -1 means "not read from the registry yet". Relaxed is enough: the value is a setting,
// not a synchronisation point, and a racing first read computes the same number.
std::atomic<int> g_threshold{-1};

const char* level_name(level l) {
    static const char* names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    return names[static_cast<int>(l)];
}

// Subsystems are single bits: the bit's index names it.
const char* subsystem_name(subsystem s) {
    static const char* names[] = {"init", "coll", "net", "inc", "sim", "ctl", "sched", "tune"};
    return names[std::countr_zero(static_cast<uint32_t>(s))];
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

bool enabled(level l, subsystem) {
    return static_cast<int>(l) <= static_cast<int>(threshold());
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
