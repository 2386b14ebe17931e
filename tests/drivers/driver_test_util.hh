// SPDX-License-Identifier: Apache-2.0
// Helpers for driver tests with real processes: fork N ranks, open and connect an endpoint
// in each, wait for completions with a deadline (spin -> yield -> sleep, so 8 ranks share 2
// cores), and fill/check buffers with a pattern that depends on (seed, offset).
//
// A forked rank never returns into CMocka: it runs its body, reports failures on stderr
// ("rank R: ...") and _exit()s with 0 or 1; the parent asserts on the exit statuses.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hh"
#include "drivers/driver.hh"
#include "drivers/registry_internal.hh"
#include "file_store.hh"

namespace loom::test {

/// A fresh store directory for one test, removed afterwards.
struct store_dir {
    explicit store_dir(const char* label) : path(file_store::make_dir(label)) {
        if (path.empty()) {
            std::fprintf(stderr, "store_dir: cannot make a store directory for %s\n", label);
            std::abort();
        }
    }
    ~store_dir() { file_store::remove_dir(path); }
    std::string path;
};

/// Fails the current rank's body: prints and returns 1 from the enclosing function.
#define RANK_CHECK(rank, cond, ...)                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            std::fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, __FILE__, __LINE__, \
                         #cond);                                                                 \
            std::fprintf(stderr, __VA_ARGS__);                                                   \
            std::fprintf(stderr, "\n");                                                          \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

/// A job name unique to this test process and label (names the shm segments).
inline std::string unique_job(const char* label) {
    return std::string("t") + std::to_string(::getpid()) + "_" + label;
}

/// The configuration of rank `rank` of a `size`-rank job.
inline drivers::endpoint_config config_of(int rank, int size, const std::string& job,
                                          kv_store* store, double timeout_s) {
    drivers::endpoint_config cfg;
    cfg.rank      = rank;
    cfg.size      = size;
    cfg.job       = job;
    cfg.store     = store;
    cfg.timeout_s = timeout_s;
    return cfg;
}

/// Connects an endpoint just opened, passing an open's or a connect's error on.
inline result<std::unique_ptr<drivers::endpoint>> connected(
    result<std::unique_ptr<drivers::endpoint>> ep) {
    if (!ep) {
        return ep.error();
    }
    if (status st = (*ep)->connect(); !st.is_ok()) {
        return st;
    }
    return ep;
}

/// Opens `driver` ("shm", "self") for one rank through its factory and connects it.
inline result<std::unique_ptr<drivers::endpoint>> open_connected(const char* driver, int rank,
                                                                 int size, const std::string& job,
                                                                 kv_store* store,
                                                                 double timeout_s = 20) {
    drivers::endpoint_config cfg = config_of(rank, size, job, store, timeout_s);
    return connected(std::string(driver) == "self" ? drivers::open_self(cfg)
                                                   : drivers::open_shm(cfg));
}

/// Opens `driver` by its registry name (shm, tcp, fault:<driver>, fwd:<driver> on the
/// lattice `fabric`) for one rank and connects it.
inline result<std::unique_ptr<drivers::endpoint>> open_named(const std::string& driver,
                                                             const std::string& fabric, int rank,
                                                             int size, const std::string& job,
                                                             kv_store* store) {
    drivers::endpoint_config cfg = config_of(rank, size, job, store, 30);
    cfg.fabric                   = fabric;
    return connected(drivers::open(driver, cfg));
}

/// Idle policy for test loops: spin briefly, then yield, then sleep 50 us.
class backoff {
  public:
    void reset() { idle_ = 0; }
    void idle() {
        ++idle_;
        if (idle_ < 64) {
            return;
        }
        if (idle_ < 256) {
            ::sched_yield();
            return;
        }
        timespec ts{0, 50000};
        ::nanosleep(&ts, nullptr);
    }

  private:
    int idle_ = 0;
};

/// Polls until `want` completions are in `out` or `timeout_s` passes; returns how many came.
inline int wait_completions(const drivers::fast_path& fp, drivers::completion* out, int want,
                            double timeout_s) {
    deadline until(timeout_s);
    backoff wait;
    int got = 0;
    while (got < want) {
        int n = fp.poll(fp.ctx, out + got, want - got);
        if (n > 0) {
            got += n;
            wait.reset();
            continue;
        }
        if (until.expired()) {
            break;
        }
        wait.idle();
    }
    return got;
}

/// Polls (handing completions to `sink`) for `seconds`.
inline void poll_for(const drivers::fast_path& fp, double seconds,
                     const std::function<void(const drivers::completion&)>& sink) {
    deadline until(seconds);
    backoff wait;
    drivers::completion c[32];
    while (!until.expired()) {
        int n = fp.poll(fp.ctx, c, 32);
        for (int i = 0; i < n; ++i) {
            sink(c[i]);
        }
        if (n > 0) {
            wait.reset();
        } else {
            wait.idle();
        }
    }
}

inline uint8_t pattern_byte(uint64_t seed, size_t i) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + (i >> 3);
    x ^= x >> 29;
    return uint8_t((x >> ((i & 7) * 8)) ^ i);
}
inline void fill(void* buf, size_t len, uint64_t seed) {
    auto* p = static_cast<uint8_t*>(buf);
    for (size_t i = 0; i < len; ++i) {
        p[i] = pattern_byte(seed, i);
    }
}
/// The first offset that differs from the pattern, or -1.
inline long check(const void* buf, size_t len, uint64_t seed) {
    auto* p = static_cast<const uint8_t*>(buf);
    for (size_t i = 0; i < len; ++i) {
        if (p[i] != pattern_byte(seed, i)) {
            return long(i);
        }
    }
    return -1;
}

/// Ranks run as threads of the test's process rather than forked processes: for a transport
/// whose simulated hardware lives in the process (tests/drivers_verbs' HCA). Set before the
/// tests run. A thread cannot be killed: the test's own timeout stops a rank that hangs.
inline bool ranks_as_threads = false;

/// run_ranks with threads (ranks_as_threads).
inline std::string run_rank_threads(int n, const std::function<int(int)>& body) {
    std::vector<int> rc(size_t(n), 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] { rc[size_t(r)] = body(r); });
    }
    std::string problems;
    for (int r = 0; r < n; ++r) {
        threads[size_t(r)].join();
        if (rc[size_t(r)] != 0) {
            problems +=
                "rank " + std::to_string(r) + " returned " + std::to_string(rc[size_t(r)]) + "; ";
        }
    }
    return problems;
}

/// Forks `n` ranks running body(rank) (0 = pass) and waits up to `timeout_s` for all of
/// them, reaping each as it exits (so a killed rank does not linger as a zombie); kills the
/// rest on timeout. Returns "" when every rank passed, otherwise what went wrong.
inline std::string run_ranks(int n, double timeout_s, const std::function<int(int)>& body) {
    if (ranks_as_threads) {
        return run_rank_threads(n, body);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    std::vector<pid_t> pids(size_t(n), -1);
    for (int r = 0; r < n; ++r) {
        pid_t pid = ::fork();
        if (pid == 0) {
            int rc = body(r);
            std::fflush(stdout);
            std::fflush(stderr);
            ::_exit(rc);
        }
        pids[size_t(r)] = pid;
    }
    std::string problems;
    int left = n;
    deadline until(timeout_s);
    while (left > 0) {
        int st    = 0;
        pid_t pid = ::waitpid(-1, &st, WNOHANG);
        if (pid > 0) {
            for (int r = 0; r < n; ++r) {
                if (pids[size_t(r)] == pid) {
                    pids[size_t(r)] = -1;
                    --left;
                    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        problems +=
                            "rank " + std::to_string(r) +
                            (WIFSIGNALED(st) ? " killed by signal " + std::to_string(WTERMSIG(st))
                                             : " exited " + std::to_string(WEXITSTATUS(st))) +
                            "; ";
                    }
                }
            }
            continue;
        }
        if (until.expired()) {
            for (int r = 0; r < n; ++r) {
                if (pids[size_t(r)] > 0) {
                    ::kill(pids[size_t(r)], SIGKILL);
                    ::waitpid(pids[size_t(r)], nullptr, 0);
                    problems += "rank " + std::to_string(r) + " timed out; ";
                }
            }
            break;
        }
        timespec ts{0, 1000000};
        ::nanosleep(&ts, nullptr);
    }
    return problems;
}

/// One rank's part of a job: its rank, the job's name and the job's store directory.
using job_rank = std::function<int(int rank, const std::string& job, const std::string& dir)>;

/// Runs `n` ranks of a fresh job named after `label`, with a store directory of its own;
/// returns what went wrong, "" when every rank passed.
inline std::string run_job(const std::string& label, int n, double timeout_s,
                           const job_rank& body) {
    store_dir dir(label.c_str());
    std::string job = unique_job(label.c_str());
    return run_ranks(n, timeout_s, [&](int r) { return body(r, job, dir.path); });
}

}  // namespace loom::test

/// Fails the running test (test_main.hh) with what went wrong in the ranks, unless nothing
/// did (run_ranks and run_job return "" then). A macro: cmocka's macros clash with driver
/// headers included after it, so this header does not include cmocka.
#define EXPECT_PASSED(problems)              \
    do {                                     \
        const std::string why_ = (problems); \
        if (!why_.empty()) {                 \
            LOOM_FAIL(why_);                 \
        }                                    \
    } while (0)
