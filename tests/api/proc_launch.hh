// SPDX-License-Identifier: Apache-2.0
// A fork-based launcher for the multi-process C API suites: N real processes, each with a
// communicator created from a config (rank, size, a file rendezvous in a fresh directory,
// a job id unique to the launch, the transport under test), running one workload. The
// parent waits with a deadline and kills every rank if one hangs, so a hang is a failure
// with the ranks that did not finish named, never a stuck test.
#pragma once

#include <loom/loom.h>

#include <cstdio>
#include <string>

#include "sleep.hh"

namespace loom::test::api {

/// What a rank's workload sees.
struct rank_context {
    loom_comm_t comm = nullptr;
    int rank = 0, size = 1;
    int failures = 0;  // checks that failed on this rank
    long checks  = 0;  // checks made on this rank

    /// Records a failed check; prints the first few as "rank R: message" on stderr.
    void report(const std::string& message);
    /// Counts a check; records `message` as a failure when `ok` is false.
    void check(bool ok, const std::string& message) {
        ++checks;
        if (!ok) {
            report(message);
        }
    }
};

using workload = void (*)(rank_context& ctx, const void* arg);

struct launch_options {
    int nranks                    = 2;
    const char* transport         = "shm";
    const char* topology          = nullptr;  // NULL: star:N
    double timeout_s              = 50;       // the whole launch
    double call_timeout_s         = 20;       // the communicators' LOOM_TIMEOUT
    loom_progress_mode_t progress = LOOM_PROGRESS_DEFAULT;
    bool workload_destroys        = false;  // the workload destroys its communicator itself
};

struct launch_result {
    bool ok = false;
    std::string summary;  // "N=4: 4 ranks ok, 1234 checks" or what failed
};

/// Forks opts.nranks processes running `fn(ctx, arg)` and waits for all of them.
launch_result launch(const launch_options& opts, workload fn, const void* arg);

/// launch(), its summary printed as a TAP comment "# NAME: summary"; fails the running test
/// unless every rank passed.
void expect_launch_ok(const launch_options& opts, workload fn, const void* arg, const char* name);

/// One rank under a launcher that loom does not fork here (loomrun, mpirun): the communicator
/// from the environment alone (loom_comm_create(NULL)), `fn`, then "rank R of N: C checks,
/// F failed" on stdout (the launch scripts count these lines). Returns the exit status.
int run_from_environment(workload fn, const void* arg);

}  // namespace loom::test::api
