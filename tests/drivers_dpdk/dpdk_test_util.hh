// SPDX-License-Identifier: Apache-2.0
// What the dpdk tests share. DPDK starts its EAL once per process and does not support a
// process that forks after it, so every case runs in a process of its own (the suite's
// binary takes the case's name) and forks the other side before its first DPDK call; the
// child reports by its exit status, never through cmocka (an assert there would run the
// rest of the suite in the child).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "test_main.hh"

namespace loom::test::dpdk {

/// A name no other test process uses at the same time (memif sockets are abstract: shared
/// by the whole network namespace).
inline std::string unique_socket(const char* what) {
    return "loom-test-" + std::string(what) + "-" + std::to_string(::getpid());
}

/// A one-way pipe for a number between parent and child.
struct channel {
    int fd[2] = {-1, -1};
    channel() {
        if (::pipe(fd) != 0) {
            fd[0] = fd[1] = -1;
        }
    }
    void put(uint64_t v) const { (void)!::write(fd[1], &v, sizeof v); }
    /// The number, or `fallback` when none came within timeout_s (or the writer closed).
    uint64_t get(double timeout_s, uint64_t fallback = ~uint64_t(0)) const {
        pollfd p{fd[0], POLLIN, 0};
        uint64_t v = 0;
        if (::poll(&p, 1, int(timeout_s * 1000)) == 1 && ::read(fd[0], &v, sizeof v) == sizeof v) {
            return v;
        }
        return fallback;
    }
};

/// Runs the case named argv[1] of `cases` alone (a process per case: see above).
inline int run_named_case(const char* group, const CMUnitTest* cases, size_t n, int argc,
                          char** argv) {
    for (size_t i = 0; i < n && argc > 1; ++i) {
        if (std::strcmp(cases[i].name, argv[1]) == 0) {
            return ::loom::test::run_group(group, &cases[i], 1);
        }
    }
    std::fprintf(stderr, "usage: %s CASE (one of:", argv[0]);
    for (size_t i = 0; i < n; ++i) {
        std::fprintf(stderr, " %s", cases[i].name);
    }
    std::fprintf(stderr, ")\n");
    return 2;
}

}  // namespace loom::test::dpdk

/// main() of a suite whose cases each run in a process of their own.
#define LOOM_DPDK_TEST_MAIN(name, ...)                                                    \
    int main(int argc, char** argv) {                                                     \
        const CMUnitTest loom_suite_[] = {__VA_ARGS__};                                   \
        return ::loom::test::dpdk::run_named_case(                                        \
            name, loom_suite_, sizeof(loom_suite_) / sizeof(loom_suite_[0]), argc, argv); \
    }
