// SPDX-License-Identifier: Apache-2.0
// Helpers of the loom-switch tests: start and stop a real loom-switch process, and run one
// rank of a collective through it (a link, a join, an inc::client) — in a thread, so a test
// runs several ranks and several switches at once. Every wait has a timeout.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "base/status.hh"
#include "inc/client/client.hh"
#include "inc/node/join.hh"

namespace loom::inc::test {

/// A loom-switch process; killed on destruction if still running, and its files removed.
struct switch_proc {
    pid_t pid = -1;
    std::string address;   // from its --ready-file
    std::string dir;       // its scratch directory
    std::string out_path;  // its stdout and stderr
    switch_proc() = default;
    switch_proc(switch_proc&& o) noexcept;
    switch_proc& operator=(switch_proc&&) = delete;
    ~switch_proc();
};

/// A fresh directory for this test's files (under $TMPDIR or /tmp); the caller removes it.
std::string scratch_dir();
/// A listen address unique to this process: "tcp:127.0.0.1:0" or "shm:loom-test-PID-N".
std::string fresh_address(bool shm);
/// Starts $LOOM_SWITCH with `args` and waits (10 s at most) until it is listening; fails
/// the running test (with the node's output) when it does not start.
switch_proc start_switch(const std::vector<std::string>& args);
/// SIGTERM, then waits (5 s at most); returns the exit status (-1: killed, not exited)
/// and sets *out to what it printed.
int stop_switch(switch_proc& s, std::string* out);
/// stop_switch, expecting a clean exit (status 0); returns what it printed.
std::string stop_cleanly(switch_proc& s);

/// The value of counter `name` in a statistics text; -1 when absent.
int64_t stat_value(const std::string& text, const std::string& name);
/// Polls `address` for its statistics until counter `name` reaches at least `want`
/// (10 s at most); returns the last text.
std::string wait_for_stat(const std::string& address, const std::string& name, int64_t want);

/// A one-level join: all `members` contribute at this node, through `slots` slots.
join_request flat_join(uint32_t members, uint32_t slots, uint32_t flags = 0);

/// One collective of a rank.
struct step {
    uint32_t seq       = 1;
    loom_dtype_t dtype = LOOM_INT32;
    collective_shape shape;  // all-reduce, reduce (flag_to_root), broadcast (flag_from_root)
    const void* in = nullptr;
    void* out      = nullptr;
    size_t count   = 0;
};

/// One rank: connects to `address`, joins (job, comm) as `member` with `req`, runs the
/// steps in order, leaves. Any failure (including a 10 s deadline) is the status.
/// `ticket`: the job's ticket bytes (ticket.hh) for a node with a key; empty: unsigned.
/// `vanish_after`: after this many steps the rank closes its link without leaving, as a
/// crashed rank would (and returns ok).
status run_rank(const std::string& address, uint64_t job, uint64_t comm, uint32_t member,
                const join_request& req, const std::vector<step>& steps,
                std::string_view ticket = {}, size_t vanish_after = SIZE_MAX);

/// Runs rank(r) for r in 0..n-1, each in its own thread, while `meanwhile` (if any) runs in
/// the caller's; returns the ranks' statuses once all are done.
std::vector<status> run_ranks(uint32_t n, const std::function<status(uint32_t)>& rank,
                              const std::function<void()>& meanwhile = {});
/// Fails the test naming the first rank whose status is an error.
void check_ranks(const std::vector<status>& res);

}  // namespace loom::inc::test

/// The main() of a loom-switch suite: runs the entries as the group `name`, or is skipped
/// (77) when not run through meson test, which names the program in $LOOM_SWITCH.
#define LOOM_SWITCH_TEST_MAIN(name, ...)                \
    int main() {                                        \
        if (std::getenv("LOOM_SWITCH") == nullptr) {    \
            return 77;                                  \
        }                                               \
        const CMUnitTest loom_suite_[] = {__VA_ARGS__}; \
        return LOOM_RUN_TESTS(name, loom_suite_);       \
    }
