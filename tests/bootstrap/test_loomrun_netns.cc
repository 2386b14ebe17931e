// SPDX-License-Identifier: Apache-2.0
// loomrun --hosts netns: two ranks in separate network namespaces meet through the
// bootstrap store at rank 0's address and talk over TCP between 10.77.0.1 and 10.77.0.2;
// afterwards (also after a failing rank and after SIGINT) no namespace or link is left.
// Needs root and iproute2's `ip netns`; otherwise the file reports "1..0 # SKIP: <reason>".
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "proc.hh"
#include "test_main.hh"

namespace {

std::string loomrun_path, probe_path;
constexpr double deadline_s = 50;

loom::test::outcome run(std::vector<std::string> argv, double deadline = deadline_s,
                        int signal_number = 0, const std::string& after = "") {
    loom::test::program p;
    p.argv          = std::move(argv);
    p.inherit_env   = true;
    p.signal_number = signal_number;
    p.signal_after  = after;
    return loom::test::run_program(p, deadline);
}

// What a loomrun with this pid may leave behind: its namespaces (loom-<pid>-<rank>), its
// bridge (lmb<pid>) and host-side veths (lm<pid>h<rank>). Filtering by pid keeps the check
// exact while other loomruns run on the same machine.
std::string leftovers(pid_t pid) {
    auto ns       = run({"/usr/sbin/ip", "netns", "list"}, 10);
    auto links    = run({"/usr/sbin/ip", "-o", "link", "show"}, 10);
    std::string p = std::to_string(pid);
    std::string out;
    for (const auto* text : {&ns.text, &links.text}) {
        std::istringstream lines(*text);
        for (std::string line; std::getline(lines, line);) {
            if (line.find("loom-" + p + "-") != std::string::npos ||
                line.find(": lmb" + p) != std::string::npos ||
                line.find(": lm" + p + "h") != std::string::npos) {
                out += line + "\n";
            }
        }
    }
    return out;
}

std::string find_skip_reason() {
    if (geteuid() != 0) {
        return "not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)";
    }
    if (access("/usr/sbin/ip", X_OK) != 0) {
        return "iproute2's ip is not installed at /usr/sbin/ip";
    }
    auto o = run({"/usr/sbin/ip", "netns", "list"}, 10);
    if (o.code != 0) {
        return "`ip netns` is unavailable: " + o.err;
    }
    return "";
}

void expect(bool ok, const loom::test::outcome& o, const std::string& what) {
    if (!ok) {
        LOOM_FAIL(what + "\nexit " + std::to_string(o.code) + "\nstdout:\n" + o.text + "stderr:\n" +
                  o.err);
    }
}

/// Fails the test, saying `what`, with the namespaces and links the run `pid` left behind.
void expect_nothing_left(pid_t pid, const std::string& what) {
    std::string after = leftovers(pid);
    if (!after.empty()) {
        LOOM_FAIL(what + ":\n" + after);
    }
}

}  // namespace

static void two_ranks_in_namespaces_talk_over_tcp_and_leave_nothing(void**) {
    auto o = run({loomrun_path, "-n", "2", "--hosts", "netns", "--transport", "tcp", "--timeout",
                  "40", "--", probe_path, "netns-tcp"});
    expect(o.code == 0, o, "the netns job failed");
    expect(o.text.find("[0] store ok rank 0 of 2 source loomrun job lr") != std::string::npos &&
               o.text.find("via 10.77.0.1:29500") != std::string::npos,
           o, "rank 0 did not meet the others at 10.77.0.1");
    expect(o.text.find("[1] sent 'hello from 10.77.0.2' to 10.77.0.1") != std::string::npos, o,
           "rank 1 did not connect from its own address");
    expect(o.text.find("[0] received 'hello from 10.77.0.2' from 10.77.0.2") != std::string::npos,
           o, "rank 0 did not see rank 1's address as the source");
    expect(o.text.find("[0] sysfs shows eth0") != std::string::npos &&
               o.text.find("[1] sysfs shows eth0") != std::string::npos,
           o, "a rank's /sys is not its namespace's");
    expect_nothing_left(o.pid, "namespaces or links left behind");
}

static void a_failing_rank_in_a_namespace_still_leaves_nothing(void**) {
    auto o =
        run({loomrun_path, "-n", "3", "--hosts", "netns", "--", probe_path, "exit-at", "1", "5"});
    expect(o.code == 5, o, "loomrun must exit with the failing rank's status");
    expect_nothing_left(o.pid, "namespaces or links left behind after a failure");
}

static void sigint_during_a_netns_job_still_leaves_nothing(void**) {
    auto o = run({loomrun_path, "-n", "2", "--hosts", "netns", "--", probe_path, "ready"},
                 deadline_s, SIGINT, "[1] ready");
    expect(o.code == 128 + SIGINT, o, "loomrun must exit 130 on SIGINT");
    expect_nothing_left(o.pid, "namespaces or links left behind after SIGINT");
}

static void a_killed_loomrun_is_cleaned_up_by_the_next_run(void**) {
    // SIGKILL cannot be caught: this run's namespaces stay until the next loomrun.
    auto killed = run({loomrun_path, "-n", "2", "--hosts", "netns", "--", probe_path, "ready"},
                      deadline_s, SIGKILL, "[1] ready");
    expect(killed.code == 128 + SIGKILL, killed, "loomrun should have been killed");
    expect(!leftovers(killed.pid).empty(), killed, "a killed run should leave its namespaces");
    auto next = run({loomrun_path, "-n", "1", "--hosts", "netns", "--", "/bin/true"});
    expect(next.code == 0, next, "the next run failed");
    expect(next.err.find("left by killed runs") != std::string::npos, next,
           "the next run did not say it removed leftovers");
    expect_nothing_left(killed.pid, "leftovers of the killed run remain");
}

int main(int argc, char** argv) {
    if (!loom::test::loomrun_args(argc, argv, &loomrun_path, &probe_path)) {
        return 2;
    }
    // The whole file needs namespaces: skip it as one TAP plan ("1..0 # SKIP: reason"), which
    // Meson counts as a skip (cmocka 1.1's per-test skip prints "not ok … # SKIP", a failure).
    if (std::string reason = find_skip_reason(); !reason.empty()) {
        std::printf("1..0 # SKIP: %s\n", reason.c_str());
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_in_namespaces_talk_over_tcp_and_leave_nothing),
        cmocka_unit_test(a_failing_rank_in_a_namespace_still_leaves_nothing),
        cmocka_unit_test(sigint_during_a_netns_job_still_leaves_nothing),
        cmocka_unit_test(a_killed_loomrun_is_cleaned_up_by_the_next_run),
    };
    return LOOM_RUN_TESTS("loomrun_netns", tests);
}
