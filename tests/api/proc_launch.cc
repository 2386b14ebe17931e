#include "proc_launch.hh"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/clock.hh"
#include "test_main.hh"

namespace loom::test::api {
namespace {

std::atomic<int> launches{0};

// The child: create the communicator, run the workload, report "checks failures" on the
// pipe, and leave with _exit (never returning into the parent's test framework).
[[noreturn]] void run_rank(const launch_options& o, int rank, const std::string& dir,
                           const std::string& job, workload fn, const void* arg, int report_fd) {
    rank_context ctx;
    ctx.rank = rank;
    ctx.size = o.nranks;
    loom_config_t cfg;
    loom_config_init(&cfg);
    std::string boot = "file:" + dir;
    cfg.rank         = rank;
    cfg.size         = o.nranks;
    cfg.bootstrap    = boot.c_str();
    cfg.job          = job.c_str();
    cfg.transport    = o.transport;
    cfg.topology     = o.topology;
    cfg.timeout_s    = o.call_timeout_s;
    cfg.progress     = o.progress;
    if (loom_comm_create(&cfg, &ctx.comm) != LOOM_SUCCESS) {
        ctx.report(std::string("loom_comm_create: ") + loom_last_error_message());
    } else {
        fn(ctx, arg);
        if (!o.workload_destroys && loom_comm_destroy(ctx.comm) != LOOM_SUCCESS) {
            ctx.report("loom_comm_destroy failed");
        }
    }
    std::string line = std::to_string(ctx.checks) + " " + std::to_string(ctx.failures) + "\n";
    ssize_t w        = write(report_fd, line.data(), line.size());
    (void)w;
    _exit(ctx.failures == 0 ? 0 : 1);
}

std::string seconds(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", s);
    return text;
}

}  // namespace

void rank_context::report(const std::string& message) {
    if (failures++ < 10) {
        std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
    }
}

namespace {

struct ranks {
    std::vector<pid_t> pids;
    std::vector<int> reports;  // read ends of the ranks' report pipes
    std::vector<int> codes;    // exit codes; -1 while running
};

ranks fork_ranks(const launch_options& o, const std::string& dir, const std::string& job,
                 workload fn, const void* arg) {
    ranks out;
    auto n = static_cast<size_t>(o.nranks);
    out.pids.assign(n, -1);
    out.reports.assign(n, -1);
    out.codes.assign(n, -1);
    std::fflush(stdout);
    std::fflush(stderr);
    for (int r = 0; r < o.nranks; ++r) {
        int fds[2];
        if (pipe(fds) != 0) {
            break;  // the rank counts as failed (no pid)
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            run_rank(o, r, dir, job, fn, arg, fds[1]);
        }
        close(fds[1]);
        out.pids[static_cast<size_t>(r)]    = pid;
        out.reports[static_cast<size_t>(r)] = fds[0];
    }
    return out;
}

// Reaps with a deadline; every rank still running at the deadline is killed.
void reap(ranks& rs, double timeout_s, std::string* hung) {
    deadline until(timeout_s);
    auto running = [&] {
        int n = 0;
        for (size_t i = 0; i < rs.pids.size(); ++i) {
            int st = 0;
            if (rs.codes[i] == -1 && rs.pids[i] > 0 &&
                waitpid(rs.pids[i], &st, WNOHANG) == rs.pids[i]) {
                rs.codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            n += rs.codes[i] == -1 && rs.pids[i] > 0;
        }
        return n;
    };
    while (running() > 0 && !until.expired()) {
        sleep_s(0.002);  // the parent only reaps children
    }
    for (size_t i = 0; i < rs.pids.size(); ++i) {
        if (rs.codes[i] == -1 && rs.pids[i] > 0) {
            kill(rs.pids[i], SIGKILL);
            waitpid(rs.pids[i], nullptr, 0);
            *hung += " " + std::to_string(i);
        }
    }
}

}  // namespace

launch_result launch(const launch_options& o, workload fn, const void* arg) {
    launch_result out;
    char tmpl[] = "/tmp/loom-api-XXXXXX";
    if (!mkdtemp(tmpl)) {
        out.summary = "mkdtemp failed";
        return out;
    }
    std::string dir = tmpl;
    std::string job = "apitest-" + std::to_string(getpid()) + "-" + std::to_string(launches++);
    double t0       = now_s();
    ranks rs        = fork_ranks(o, dir, job, fn, arg);
    std::string hung, failed;
    reap(rs, o.timeout_s, &hung);
    long checks = 0;
    for (size_t i = 0; i < rs.pids.size(); ++i) {
        if (rs.codes[i] > 0 || rs.pids[i] <= 0) {
            failed += " " + std::to_string(i) + "(exit " + std::to_string(rs.codes[i]) + ")";
        }
        char buf[64] = {0};
        if (rs.reports[i] >= 0) {
            if (read(rs.reports[i], buf, sizeof buf - 1) > 0) {
                checks += std::strtol(buf, nullptr, 10);
            }
            close(rs.reports[i]);
        }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    out.ok      = hung.empty() && failed.empty();
    out.summary = "N=" + std::to_string(o.nranks) + " " + o.transport +
                  (o.progress == LOOM_PROGRESS_THREAD ? " progress-thread" : "") +
                  (o.topology ? std::string(" ") + o.topology : std::string()) + ": " +
                  std::to_string(checks) + " checks in " + seconds(now_s() - t0);
    if (!hung.empty()) {
        out.summary += "; ranks still running after the deadline (killed):" + hung;
    }
    if (!failed.empty()) {
        out.summary += "; ranks failed:" + failed;
    }
    return out;
}

void expect_launch_ok(const launch_options& opts, workload fn, const void* arg, const char* name) {
    launch_result r = launch(opts, fn, arg);
    std::printf("# %s: %s\n", name, r.summary.c_str());
    if (!r.ok) {
        LOOM_FAIL(r.summary);
    }
}

int run_from_environment(workload fn, const void* arg) {
    rank_context ctx;
    if (loom_comm_create(nullptr, &ctx.comm) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom_comm_create(NULL): %s\n", loom_last_error_message());
        return 1;
    }
    ctx.rank = loom_comm_rank(ctx.comm);
    ctx.size = loom_comm_size(ctx.comm);
    fn(ctx, arg);
    loom_comm_destroy(ctx.comm);
    std::printf("rank %d of %d: %ld checks, %d failed\n", ctx.rank, ctx.size, ctx.checks,
                ctx.failures);
    return ctx.failures == 0 ? 0 : 1;
}

}  // namespace loom::test::api
