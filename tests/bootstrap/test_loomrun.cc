// SPDX-License-Identifier: Apache-2.0
// loomrun with real ranks (the loomrun_probe program): the environment each rank gets,
// output prefixing, exit-status propagation, timeout, a killed rank, SIGINT, --version, and
// the bootstrap store end to end through the rendezvous loomrun hands out.
#include <errno.h>
#include <signal.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "proc.hh"
#include "test_main.hh"

namespace {

std::string loomrun_path, probe_path;
constexpr double deadline_s = 40;

loom::test::outcome loomrun(std::vector<std::string> args, int signal_number = 0,
                            const std::string& signal_after = "") {
    loom::test::program p;
    p.argv = {loomrun_path};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.inherit_env   = true;
    p.signal_number = signal_number;
    p.signal_after  = signal_after;
    return loom::test::run_program(p, deadline_s);
}

std::string describe(const loom::test::outcome& o) {
    return "exit " + std::to_string(o.code) + " after " + std::to_string(o.elapsed_s) +
           " s\nstdout:\n" + o.text + "stderr:\n" + o.err;
}

void expect(bool ok, const loom::test::outcome& o, const char* what) {
    if (!ok) {
        LOOM_FAIL(std::string(what) + "\n" + describe(o));
    }
}

// Lines of `text`, and the words of a line.
std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string part; std::getline(in, part, sep);) {
        out.push_back(part);
    }
    return out;
}

// "[k] rest" → k, or -1 when the line has no rank prefix.
int prefix_rank(const std::string& line, std::string* rest) {
    size_t close = line.find("] ");
    if (line.empty() || line[0] != '[' || close == std::string::npos || close == 1 ||
        line.find_first_not_of("0123456789", 1) != close) {
        return -1;
    }
    *rest = line.substr(close + 2);
    return std::stoi(line.substr(1, close - 1));
}

// The pids the ranks printed ("[k] pid=N"): all of them must be gone after loomrun returns.
void expect_ranks_gone(const loom::test::outcome& o, int expected) {
    int seen = 0;
    for (const auto& line : split(o.text, '\n')) {
        std::string rest;
        if (prefix_rank(line, &rest) >= 0 && rest.rfind("pid=", 0) == 0) {
            pid_t pid = std::stoi(rest.substr(4));
            ++seen;
            expect(kill(pid, 0) != 0 && errno == ESRCH, o, "a rank outlived loomrun");
        }
    }
    expect(seen == expected, o, "not every waiting rank printed its pid");
}

}  // namespace

// Two jobs started at once from one shell, both over shm and tcp rendezvous: each meets only
// its own ranks (its own job id and rendezvous), even with one LOOM_JOB_SECRET in the shell
// (which both use).
static void two_jobs_from_one_shell_are_kept_apart(void**) {
    std::vector<loom::test::program> jobs(2);
    for (auto& p : jobs) {
        p.argv        = {loomrun_path, "-n", "3", "--", probe_path, "store"};
        p.inherit_env = true;
        p.env         = {"LOOM_JOB_SECRET=" + std::string(64, 'e')};
    }
    auto out = loom::test::run_programs(jobs, deadline_s);
    std::string job[2];
    for (int j = 0; j < 2; ++j) {
        expect(out[j].code == 0, out[j], "a job failed");
        for (int k = 0; k < 3; ++k) {
            std::string want = "store ok rank " + std::to_string(k) + " of 3";
            expect(out[j].text.find(want) != std::string::npos, out[j], "a rank did not meet");
        }
        size_t at = out[j].text.find(" job ");
        job[j]    = out[j].text.substr(at + 5, out[j].text.find(' ', at + 5) - at - 5);
    }
    if (job[0] == job[1]) {
        LOOM_FAIL("both launches got job id " + job[0]);
    }
}

static void every_rank_gets_its_environment(void**) {
    auto o = loomrun({"-n", "3", "--transport", "tcp", "--", probe_path, "env"});
    expect(o.code == 0, o, "loomrun failed");
    std::set<std::string> jobs, bootstraps;
    int ranks = 0;
    for (const auto& line : split(o.text, '\n')) {
        std::string rest;
        int k = prefix_rank(line, &rest);
        expect(k >= 0 && rest.rfind("env ", 0) == 0, o, "an unexpected line");
        std::map<std::string, std::string> kv;
        for (const auto& word : split(rest.substr(4), ' ')) {
            kv[word.substr(0, word.find('='))] = word.substr(word.find('=') + 1);
        }
        expect(kv["rank"] == std::to_string(k), o, "the prefix is not the rank's LOOM_RANK");
        expect(kv["size"] == "3" && kv["transport"] == "tcp" && kv["tcp_addr"] == "(unset)", o,
               "wrong LOOM_SIZE, LOOM_TRANSPORT or LOOM_TCP_ADDR");
        expect(kv["bootstrap"].rfind("127.0.0.1:", 0) == 0, o, "the rendezvous is not loopback");
        jobs.insert(kv["job"]);
        bootstraps.insert(kv["bootstrap"]);
        ++ranks;
    }
    expect(ranks == 3 && jobs.size() == 1 && bootstraps.size() == 1, o,
           "three ranks with one job and one rendezvous");
}

static void output_lines_are_prefixed_with_the_rank(void**) {
    auto o = loomrun({"-n", "3", "--", probe_path, "print"});
    expect(o.code == 0, o, "loomrun failed");
    for (int k = 0; k < 3; ++k) {
        std::string r = "[" + std::to_string(k) + "] ";
        expect(loom::test::count_lines_with(o.text,
                                            r + "hello from " + std::to_string(k) + " of 3") == 1,
               o, "missing hello line");
        expect(loom::test::count_lines_with(o.text, r + "second line " + std::to_string(k)) == 1, o,
               "missing second line");
        expect(loom::test::count_lines_with(o.err, r + "note from " + std::to_string(k)) == 1, o,
               "stderr line missing or not prefixed");
    }
    for (const auto& line : split(o.text, '\n')) {
        std::string rest;
        int k = prefix_rank(line, &rest);
        expect(k >= 0 && k < 3, o, "an unprefixed line");
    }
}

static void a_failing_rank_ends_the_job_with_its_status(void**) {
    auto o = loomrun({"-n", "4", "--", probe_path, "exit-at", "2", "3"});
    expect(o.code == 3, o, "loomrun must exit with the failing rank's status");
    expect(o.elapsed_s < 10, o, "the other ranks were not ended promptly");
    expect(o.err.find("loomrun: rank 2 exited with status 3; ending the other 3 ranks") !=
               std::string::npos,
           o, "missing reason line");
    expect_ranks_gone(o, 3);
}

static void a_killed_rank_ends_the_others_even_if_they_ignore_sigterm(void**) {
    auto o = loomrun({"-n", "3", "--grace", "0.5", "--", probe_path, "kill-at", "1"});
    expect(o.code == 128 + SIGKILL, o, "loomrun must exit 128+SIGKILL");
    expect(o.err.find("loomrun: rank 1 was killed by SIGKILL") != std::string::npos, o,
           "missing reason line");
    expect(o.elapsed_s < 10, o, "SIGKILL after the grace period did not come");
    expect_ranks_gone(o, 2);
}

static void a_timeout_ends_everything_with_124(void**) {
    auto o = loomrun({"-n", "2", "--timeout", "1", "--", probe_path, "sleep", "30"});
    expect(o.code == 124, o, "loomrun must exit 124 on timeout");
    expect(o.elapsed_s >= 1 && o.elapsed_s < 8, o, "the timeout did not end the job in time");
    expect(o.err.find("timed out after 1.0 s; ranks still running: 0,1") != std::string::npos, o,
           "the reason must name the ranks still running");
    expect_ranks_gone(o, 2);
}

static void sigint_to_loomrun_ends_the_ranks(void**) {
    auto o = loomrun({"-n", "2", "--", probe_path, "ready"}, SIGINT, "[1] ready");
    expect(o.code == 128 + SIGINT, o, "loomrun must exit 130 on SIGINT");
    expect(o.err.find("interrupted by SIGINT") != std::string::npos, o, "missing reason line");
}

static void a_program_that_cannot_run_is_status_127(void**) {
    auto o = loomrun({"-n", "2", "--", "/nonexistent/program"});
    expect(o.code == 127, o, "exec failure must be 127");
    expect(o.err.find("cannot execute '/nonexistent/program'") != std::string::npos, o,
           "missing exec failure message");
}

static void ranks_meet_through_the_rendezvous_loomrun_gives(void**) {
    auto o = loomrun({"-n", "4", "--timeout", "30", "--", probe_path, "store"});
    expect(o.code == 0, o, "the store exchange failed");
    for (int k = 0; k < 4; ++k) {
        std::string want = "[" + std::to_string(k) + "] store ok rank " + std::to_string(k) +
                           " of 4 source loomrun job lr";
        expect(loom::test::count_lines_with(o.text, want) == 1, o, "a rank did not finish");
    }
}

static void version_names_the_build_features(void**) {
    auto o = loomrun({"--version"});
    expect(o.code == 0, o, "--version failed");
    expect(o.text.rfind("loomrun ", 0) == 0, o, "no version line");
    expect(
        o.text.find("features: ") != std::string::npos && o.text.find("dpdk:") != std::string::npos,
        o, "no feature list");
    auto bad = loomrun({"-n", "2", "--hosts", "mars", "--", "true"});
    expect(bad.code == 2 && bad.err.rfind("loomrun: ", 0) == 0, bad, "bad flag must exit 2");
}

int main(int argc, char** argv) {
    if (!loom::test::loomrun_args(argc, argv, &loomrun_path, &probe_path)) {
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_rank_gets_its_environment),
        cmocka_unit_test(two_jobs_from_one_shell_are_kept_apart),
        cmocka_unit_test(output_lines_are_prefixed_with_the_rank),
        cmocka_unit_test(a_failing_rank_ends_the_job_with_its_status),
        cmocka_unit_test(a_killed_rank_ends_the_others_even_if_they_ignore_sigterm),
        cmocka_unit_test(a_timeout_ends_everything_with_124),
        cmocka_unit_test(sigint_to_loomrun_ends_the_ranks),
        cmocka_unit_test(a_program_that_cannot_run_is_status_127),
        cmocka_unit_test(ranks_meet_through_the_rendezvous_loomrun_gives),
        cmocka_unit_test(version_names_the_build_features),
    };
    return LOOM_RUN_TESTS("loomrun_processes", tests);
}
