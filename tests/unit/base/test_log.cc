// SPDX-License-Identifier: Apache-2.0
// runtime/base/log: every line carries the UTC time (microseconds), the host, the pid and the
// rank (`-` until one is set) in one fixed form; a forked child names its own pid;
// LOOM_LOG_SUBSYSTEMS picks the subsystems of debug lines (errors, warnings and info always
// show) and an unknown name is an error naming the known ones. Each case runs in a forked
// child whose stderr is a pipe, as the registry reads the environment once per process.
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.hh"
#include "base/log_params.hh"
#include "base/params.hh"
#include "test_main.hh"

using namespace loom;

namespace {

struct child_output {
    std::string err;
    int exit_code = -1;
    pid_t pid     = 0;
};

// Runs `body` in a child with `env` set (NAME=VALUE; NAME= unsets), its stderr captured.
child_output in_child(const std::vector<std::string>& env, const std::function<int()>& body) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        for (const std::string& e : env) {
            size_t eq = e.find('=');
            if (eq + 1 == e.size()) {
                unsetenv(e.substr(0, eq).c_str());
            } else {
                setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
            }
        }
        std::fflush(stderr);
        _exit(body());
    }
    close(fds[1]);
    child_output out;
    out.pid = pid;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) {
        out.err.append(buf, size_t(n));
    }
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    out.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) {
            LOOM_FAIL("a line without its newline: " + text.substr(at));
        }
        out.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return out;
}

struct fields {
    std::string time, host, pid, rank, level, subsystem, message;
};

bool all_digits(std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// "YYYY-MM-DDTHH:MM:SS.uuuuuuZ": digits where the pattern has 9s, the rest literally.
bool iso_utc_with_micros(std::string_view s) {
    constexpr std::string_view pattern = "9999-99-99T99:99:99.999999Z";
    if (s.size() != pattern.size()) {
        return false;
    }
    for (size_t i = 0; i < s.size(); ++i) {
        bool ok = pattern[i] == '9' ? (s[i] >= '0' && s[i] <= '9') : s[i] == pattern[i];
        if (!ok) {
            return false;
        }
    }
    return true;
}

// time host pid=P rank=R loom LEVEL subsys: message — each field checked, as a collector
// splitting on single spaces would read it (std::regex is not used: GCC 12 warns inside it
// under the sanitizers).
fields split(const std::string& line) {
    std::vector<std::string> words;
    size_t at = 0;
    while (words.size() < 7) {
        size_t space = line.find(' ', at);
        if (space == std::string::npos) {
            LOOM_FAIL("not of the log line's form (too few fields): '" + line + "'");
        }
        words.push_back(line.substr(at, space - at));
        at = space + 1;
    }
    const std::string& subsystem = words[6];
    const bool levels = words[5] == "ERROR" || words[5] == "WARN" || words[5] == "INFO" ||
                        words[5] == "DEBUG" || words[5] == "TRACE";
    const bool form =
        iso_utc_with_micros(words[0]) && !words[1].empty() && words[2].starts_with("pid=") &&
        all_digits(std::string_view(words[2]).substr(4)) && words[3].starts_with("rank=") &&
        (words[3] == "rank=-" || all_digits(std::string_view(words[3]).substr(5))) &&
        words[4] == "loom" && levels && subsystem.size() >= 2 && subsystem.back() == ':' &&
        subsystem.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == subsystem.size() - 1;
    if (!form) {
        LOOM_FAIL("not of the log line's form: '" + line + "'");
    }
    return {words[0].substr(0, 19), words[1], words[2].substr(4),
            words[3].substr(5),     words[5], subsystem.substr(0, subsystem.size() - 1),
            line.substr(at)};
}

std::string this_host() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

void every_line_names_time_host_pid_and_rank(void**) {
    const time_t before = time(nullptr);
    auto out            = in_child({"LOOM_LOG_LEVEL=warn"}, [] {
        LOOM_LOG_WARN(log::subsystem::init, "before the rank, %d", 7);
        log::set_rank(3);
        LOOM_LOG_ERROR(log::subsystem::coll, "rank %d", 3);
        LOOM_LOG_INFO(log::subsystem::coll, "below the level");
        return 0;
    });
    const time_t after  = time(nullptr);
    assert_int_equal(out.exit_code, 0);
    auto lines = lines_of(out.err);
    assert_int_equal(lines.size(), 2);
    fields a = split(lines[0]), b = split(lines[1]);
    assert_string_equal(a.host.c_str(), this_host().c_str());
    assert_string_equal(a.pid.c_str(), std::to_string(out.pid).c_str());
    assert_string_equal(a.rank.c_str(), "-");
    assert_string_equal(a.level.c_str(), "WARN");
    assert_string_equal(a.subsystem.c_str(), "init");
    assert_string_equal(a.message.c_str(), "before the rank, 7");
    assert_string_equal(b.rank.c_str(), "3");
    assert_string_equal(b.level.c_str(), "ERROR");
    assert_string_equal(b.message.c_str(), "rank 3");
    // The time is UTC, now.
    tm utc{};
    assert_non_null(strptime(a.time.c_str(), "%Y-%m-%dT%H:%M:%S", &utc));
    time_t logged = timegm(&utc);
    assert_true(logged >= before - 1 && logged <= after + 1);
}

void a_forked_child_names_its_own_pid(void**) {
    auto out   = in_child({"LOOM_LOG_LEVEL=warn"}, [] {
        LOOM_LOG_WARN(log::subsystem::init, "parent");
        pid_t grandchild = fork();
        if (grandchild == 0) {
            LOOM_LOG_WARN(log::subsystem::init, "child %ld", long(getpid()));
            _exit(0);
        }
        int st = 0;
        waitpid(grandchild, &st, 0);
        return 0;
    });
    auto lines = lines_of(out.err);
    assert_int_equal(lines.size(), 2);
    fields parent = split(lines[0]), child = split(lines[1]);
    assert_string_equal(parent.pid.c_str(), std::to_string(out.pid).c_str());
    assert_string_equal(child.message.c_str(), ("child " + child.pid).c_str());
    assert_string_not_equal(child.pid.c_str(), parent.pid.c_str());
}

void a_long_message_stays_one_line(void**) {
    auto out   = in_child({"LOOM_LOG_LEVEL=warn"}, [] {
        std::string big(5000, 'x');
        LOOM_LOG_WARN(log::subsystem::net, "%s", big.c_str());
        LOOM_LOG_WARN(log::subsystem::net, "next");
        return 0;
    });
    auto lines = lines_of(out.err);
    assert_int_equal(lines.size(), 2);
    assert_true(split(lines[0]).message.starts_with("xxxx"));
    assert_string_equal(split(lines[1]).message.c_str(), "next");
}

// Logs a debug and a warning line for every subsystem; returns the lines' "LEVEL subsys".
std::vector<std::string> shown(const std::vector<std::string>& env, int* exit_code = nullptr) {
    auto out = in_child(env, [] {
        using log::subsystem;
        for (subsystem s : {subsystem::init, subsystem::coll, subsystem::net, subsystem::inc,
                            subsystem::sim, subsystem::ctl, subsystem::sched, subsystem::tune}) {
            LOOM_LOG_DEBUG(s, "debug");
            LOOM_LOG_WARN(s, "warn");
        }
        // An unknown name is the registry's first error: it reaches the caller's check.
        return params::registry::global().load_status().is_ok() ? 0 : 3;
    });
    if (exit_code != nullptr) {
        *exit_code = out.exit_code;
    }
    std::vector<std::string> out_lines;
    for (const std::string& line : lines_of(out.err)) {
        fields f = split(line);
        out_lines.push_back(f.level + " " + f.subsystem);
    }
    return out_lines;
}

size_t count(const std::vector<std::string>& lines, const std::string& what) {
    return size_t(std::count(lines.begin(), lines.end(), what));
}

void subsystems_pick_the_debug_lines(void**) {
    auto lines = shown({"LOOM_LOG_LEVEL=debug", "LOOM_LOG_SUBSYSTEMS=inc,tune"});
    assert_int_equal(count(lines, "DEBUG inc"), 1);
    assert_int_equal(count(lines, "DEBUG tune"), 1);
    assert_int_equal(count(lines, "DEBUG coll"), 0);
    assert_int_equal(count(lines, "DEBUG init"), 0);
    assert_int_equal(lines.size(), 2 + 8);  // every warning still shows
    assert_int_equal(count(lines, "WARN coll"), 1);

    lines = shown({"LOOM_LOG_LEVEL=debug", "LOOM_LOG_SUBSYSTEMS="});  // default: all
    assert_int_equal(lines.size(), 16);
    lines = shown({"LOOM_LOG_LEVEL=debug", "LOOM_LOG_SUBSYSTEMS=net,all"});
    assert_int_equal(lines.size(), 16);
    lines = shown({"LOOM_LOG_LEVEL=warn", "LOOM_LOG_SUBSYSTEMS=inc"});  // the level first
    assert_int_equal(lines.size(), 8);
    assert_int_equal(count(lines, "DEBUG inc"), 0);
}

void an_unknown_subsystem_is_an_error_naming_the_known_ones(void**) {
    int code   = 0;
    auto lines = shown({"LOOM_LOG_LEVEL=debug", "LOOM_LOG_SUBSYSTEMS=inc,bogus"}, &code);
    assert_int_equal(code, 3);
    assert_int_equal(lines.size(), 16);  // the default (all) applies meanwhile
    const params::param& p = log::params::subsystems.declaration();
    status st              = params::validate(p, "inc,bogus");
    assert_false(st.is_ok());
    loom::test::expect_has(st.message(),
                           "LOOM_LOG_SUBSYSTEMS='inc,bogus': 'bogus' is not one of "
                           "init|coll|net|inc|sim|ctl|sched|tune|all");
    assert_false(params::validate(p, "inc,").is_ok());  // an empty item
    assert_false(params::validate(p, "").is_ok());
    assert_false(params::validate(p, "INC").is_ok());
    assert_true(params::validate(p, "init,coll,net,inc,sim,ctl,sched,tune").is_ok());
    assert_true(params::validate(p, "all").is_ok());
}

}  // namespace

LOOM_TEST_MAIN("base_log", cmocka_unit_test(every_line_names_time_host_pid_and_rank),
               cmocka_unit_test(a_forked_child_names_its_own_pid),
               cmocka_unit_test(a_long_message_stays_one_line),
               cmocka_unit_test(subsystems_pick_the_debug_lines),
               cmocka_unit_test(an_unknown_subsystem_is_an_error_naming_the_known_ones))
