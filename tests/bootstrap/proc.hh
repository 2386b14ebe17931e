// SPDX-License-Identifier: Apache-2.0
// Real processes for the bootstrap and loomrun tests: forked ranks that report back through a
// pipe, and programs run with a chosen environment, their output captured. Every wait has a
// deadline; a child still running at the deadline is killed and reported as hung.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace loom::test {

/// How a child ended: its exit status, 128+signal when killed, -1 when it hung past the
/// deadline (then killed); `text` is what it reported (ranks) or its stdout (programs).
struct outcome {
    int code = -1;
    std::string text;
    std::string err;        // programs: stderr
    double elapsed_s = 0;   // programs: wall time until exit
    pid_t pid        = -1;  // the child's pid (reaped: only for names derived from it)
};

/// Forks `n` children; child k runs body(k, &report) and exits with its return value,
/// after sending `report` to the parent. The parent must have no threads (fork).
std::vector<outcome> run_ranks(int n, const std::function<int(int rank, std::string* report)>& body,
                               double deadline_s);

struct program {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // the whole environment (nothing is inherited)
    bool inherit_env = false;      // or: the parent's environment plus `env`
    // Once stdout contains `signal_after`, the program gets `signal_number` (once).
    std::string signal_after;
    int signal_number = 0;
};

/// Fails the test with every rank's report when one did not exit 0.
void expect_all_ok(const std::vector<outcome>& out);

/// Runs a program to completion (or the deadline) and captures stdout and stderr.
outcome run_program(const program& p, double deadline_s);
/// Runs several programs at once, all children of this process, and waits for all.
std::vector<outcome> run_programs(const std::vector<program>& ps, double deadline_s);

/// The loomrun tests' arguments, LOOMRUN and LOOMRUN_PROBE; false (the usage printed) when
/// they are missing.
bool loomrun_args(int argc, char** argv, std::string* loomrun, std::string* probe);

/// A TCP port on 127.0.0.1 that is free now.
int free_port();

/// Lines of `text` that contain `needle`.
int count_lines_with(const std::string& text, const std::string& needle);

}  // namespace loom::test
