// SPDX-License-Identifier: Apache-2.0
#include "log.hh"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "log_params.hh"

namespace loom::log {
namespace {

// -1 means "not read from the registry yet"; a racing first read computes the same numbers.
// The threshold is published with release after the mask, so a thread that reads it (with
// acquire: a plain load on x86 and a cheap one elsewhere) reads the mask too.
std::atomic<int> g_threshold{-1};
std::atomic<uint32_t> g_debug_mask{~0u};
std::atomic<int> g_rank{-1};

constexpr const char* level_names[]     = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
constexpr const char* subsystem_names[] = {"init", "coll", "net",   "inc",
                                           "sim",  "ctl",  "sched", "tune"};

// Subsystems are single bits: the bit's index names it.
const char* subsystem_name(subsystem s) {
    return subsystem_names[std::countr_zero(static_cast<uint32_t>(s))];
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

// LOOM_LOG_SUBSYSTEMS as bits (the registry checked every name; `all` sets every bit).
uint32_t load_debug_mask() {
    std::string list = params::subsystems.get();
    uint32_t mask    = 0;
    for (size_t at = 0; at <= list.size();) {
        size_t end            = std::min(list.find(',', at), list.size());
        std::string_view item = std::string_view(list).substr(at, end - at);
        if (item == "all") {
            return ~0u;
        }
        for (size_t bit = 0; bit < std::size(subsystem_names); ++bit) {
            mask |= item == subsystem_names[bit] ? 1u << bit : 0;
        }
        at = end + 1;
    }
    return mask;
}

// The host and the process, read once per process (again in a forked child) rather than
// per line.
struct origin {
    char host[256] = "-";
    long pid       = 0;
};
origin g_origin;

void read_pid() {
    g_origin.pid = long(getpid());
}

const origin& this_process() {
    static const bool once = [] {
        if (gethostname(g_origin.host, sizeof g_origin.host - 1) != 0 || g_origin.host[0] == 0) {
            std::strcpy(g_origin.host, "-");
        }
        // A host name has no spaces; any byte that would split the line's fields is replaced.
        for (char* c = g_origin.host; *c != 0; ++c) {
            *c = *c <= ' ' ? '_' : *c;
        }
        read_pid();
        pthread_atfork(nullptr, nullptr, read_pid);
        return true;
    }();
    (void)once;
    return g_origin;
}

// "2026-11-25T14:37:14.123456Z" into out (at least 28 bytes); returns its length.
int format_time(char* out, size_t size) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    tm utc{};
    gmtime_r(&ts.tv_sec, &utc);
    size_t n = std::strftime(out, size, "%Y-%m-%dT%H:%M:%S", &utc);
    return int(n) + std::snprintf(out + n, size - n, ".%06ldZ", long(ts.tv_nsec / 1000));
}

}  // namespace

level threshold() {
    int t = g_threshold.load(std::memory_order_acquire);
    if (t < 0) {
        g_debug_mask.store(load_debug_mask(), std::memory_order_relaxed);
        t = load_threshold();
        g_threshold.store(t, std::memory_order_release);
    }
    return static_cast<level>(t);
}

bool enabled(level l, subsystem s) {
    if (static_cast<int>(l) > static_cast<int>(threshold())) {
        return false;
    }
    return l <= level::info ||
           (g_debug_mask.load(std::memory_order_relaxed) & static_cast<uint32_t>(s)) != 0;
}

void set_rank(int rank) {
    g_rank.store(rank, std::memory_order_relaxed);
}

void write(level l, subsystem s, const char* fmt, ...) {
    const origin& o = this_process();
    char line[1536];
    int n         = format_time(line, sizeof line);
    char rank[16] = "-";
    if (int r = g_rank.load(std::memory_order_relaxed); r >= 0) {
        std::snprintf(rank, sizeof rank, "%d", r);
    }
    n +=
        std::snprintf(line + n, sizeof line - size_t(n), " %s pid=%ld rank=%s loom %s %s: ", o.host,
                      o.pid, rank, level_names[static_cast<int>(l)], subsystem_name(s));
    n = std::min(n, int(sizeof line) - 2);
    va_list args;
    va_start(args, fmt);
    int m = std::vsnprintf(line + n, sizeof line - 1 - size_t(n), fmt, args);
    va_end(args);
    n         = m < 0 ? n : std::min(n + m, int(sizeof line) - 2);
    line[n++] = '\n';
    std::fwrite(line, 1, size_t(n), stderr);
}

}  // namespace loom::log
