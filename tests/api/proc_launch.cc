// SPDX-License-Identifier: Apache-2.0
#include "proc_launch.hh"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>

#include "base/clock.hh"
#include "proc.hh"
#include "test_main.hh"

namespace loom::test::api {
namespace {

std::atomic<int> launches{0};

// The child (run_ranks forks it and leaves with _exit, never returning into the parent's test
// framework): create the communicator, run the workload, report "checks failures".
int run_rank(const launch_options& o, int rank, const std::string& dir, const std::string& job,
             workload fn, const void* arg, std::string* report) {
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
    *report = std::to_string(ctx.checks) + " " + std::to_string(ctx.failures);
    return ctx.failures == 0 ? 0 : 1;
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
    std::fflush(stdout);  // nothing buffered here is written again by a child
    std::fflush(stderr);
    auto ranks = run_ranks(
        o.nranks,
        [&](int rank, std::string* report) { return run_rank(o, rank, dir, job, fn, arg, report); },
        o.timeout_s);
    std::string hung, failed;
    long checks = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i].code == -1) {
            hung += " " + std::to_string(i);
        } else if (ranks[i].code != 0) {
            failed += " " + std::to_string(i) + "(exit " + std::to_string(ranks[i].code) + ")";
        }
        checks += std::strtol(ranks[i].text.c_str(), nullptr, 10);
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
