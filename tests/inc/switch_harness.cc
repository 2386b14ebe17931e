// SPDX-License-Identifier: Apache-2.0
// Helpers of the loom-switch tests (switch_harness.hh).
#include "switch_harness.hh"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/clock.hh"
#include "drivers/datagram.hh"
#include "test_main.hh"

namespace loom::inc::test {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

void sleep_ms(int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

switch_proc::switch_proc(switch_proc&& o) noexcept
    : pid(o.pid),
      address(std::move(o.address)),
      dir(std::move(o.dir)),
      out_path(std::move(o.out_path)) {
    o.pid = -1;
    o.dir.clear();
}

switch_proc::~switch_proc() {
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
    if (!dir.empty()) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
}

std::string scratch_dir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != 0 ? tmp : "/tmp") + "/loom-switch-test-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
        return ".";
    }
    return pattern;
}

std::string fresh_address(bool shm) {
    static std::atomic<int> n{0};
    if (!shm) {
        return "tcp:127.0.0.1:0";
    }
    return "shm:loom-test-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

switch_proc start_switch(const std::vector<std::string>& args) {
    static std::atomic<int> n{0};
    const char* bin = std::getenv("LOOM_SWITCH");
    switch_proc s;
    if (bin == nullptr) {
        return s;
    }
    s.dir                        = scratch_dir();
    int id                       = n++;
    std::string ready            = s.dir + "/ready" + std::to_string(id);
    s.out_path                   = s.dir + "/out" + std::to_string(id);
    std::vector<std::string> all = {bin};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"--ready-file", ready});
    // A node without a key must be told to admit anyone; tests of the proof give a key.
    if (std::find(args.begin(), args.end(), "--key-file") == args.end() &&
        std::find(args.begin(), args.end(), "--insecure") == args.end()) {
        all.push_back("--insecure");
    }
    std::vector<char*> argv;
    for (auto& a : all) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    pid_t parent = getpid();
    pid_t pid    = fork();
    if (pid == 0) {
        // A test that fails an assertion exits without stopping its nodes: they go with it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        int fd = open(s.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(bin, argv.data());
        _exit(127);
    }
    s.pid = pid;
    for (double end = now_s() + 10; now_s() < end; sleep_ms(5)) {
        std::string a = read_file(ready);
        if (!a.empty() && a.back() == '\n') {
            s.address = a.substr(0, a.size() - 1);
            break;
        }
        if (waitpid(pid, nullptr, WNOHANG) == pid) {
            s.pid = -1;  // it exited: its output says why
            break;
        }
    }
    if (s.pid <= 0 || s.address.empty()) {
        LOOM_FAIL("loom-switch did not start: " + read_file(s.out_path));
    }
    return s;
}

int stop_switch(switch_proc& s, std::string* out) {
    int code = -1;
    if (s.pid > 0) {
        kill(s.pid, SIGTERM);
        for (double end = now_s() + 5; now_s() < end; sleep_ms(5)) {
            int st = 0;
            if (waitpid(s.pid, &st, WNOHANG) == s.pid) {
                code  = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
                s.pid = -1;
                break;
            }
        }
    }
    *out = read_file(s.out_path);
    return code;
}

int64_t stat_value(const std::string& text, const std::string& name) {
    // Line by line: the text may hold other lines ("loom-switch listening on …").
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string key;
        int64_t value = 0;
        if (fields >> key >> value && key == name) {
            return value;
        }
    }
    return -1;
}

std::string wait_for_stat(const std::string& address, const std::string& name, int64_t want) {
    std::string text;
    for (double end = now_s() + 10; now_s() < end; sleep_ms(10)) {
        auto t = query_stats(address, 2);
        if (t) {
            text = *t;
            if (stat_value(text, name) >= want) {
                break;
            }
        }
    }
    return text;
}

join_request flat_join(uint32_t members, uint32_t slots, uint32_t flags) {
    join_request r;
    r.members = r.expected = members;
    r.slots                = slots;
    r.flags                = flags;
    return r;
}

namespace {

status run_step(drivers::datagram_endpoint& l, client& c, const step& s) {
    if (status st = c.start(s.seq, s.dtype, LOOM_SUM, s.in, s.out, s.count, now_s(), s.shape);
        !st) {
        return st;
    }
    while (!c.done()) {
        if (status st = c.poll(now_s(), l); !st) {
            return st;
        }
        if (!l.alive()) {
            return status(LOOM_ERR_PEER_FAILURE, "the switch closed " + l.describe());
        }
        const uint8_t* p = nullptr;
        size_t len       = 0;
        bool any         = false;
        while (l.recv(&p, &len)) {
            any = true;
            header h;
            const uint8_t* body = nullptr;
            if (parse(p, len, &h, &body) == parse_error::none) {
                c.on_packet(h, body, now_s(), l);
            }
        }
        if (!any) {
            sched_yield();
        }
    }
    return status::ok();
}

}  // namespace

status run_rank(const std::string& address, uint64_t job, uint64_t comm, uint32_t member,
                const join_request& req, const std::vector<step>& steps, std::string_view ticket,
                size_t vanish_after) {
    auto l = drivers::connect_datagram(address, 5);
    if (!l) {
        return l.error();
    }
    auto slots = join_node(**l, job, comm, member, req, 5, ticket);
    if (!slots) {
        return slots.error();
    }
    client_config cfg;
    cfg.job = job, cfg.comm = comm, cfg.rank = member, cfg.members = req.members;
    cfg.window         = *slots;
    cfg.chunk_elements = 1024;
    cfg.deterministic  = (req.flags & join_deterministic) != 0;
    cfg.rto_s          = 2e-3;  // threads share two cores with the switches
    cfg.max_rto_s      = 50e-3;
    cfg.deadline_s     = 10;
    client c(cfg);
    for (size_t i = 0; i < steps.size(); ++i) {
        if (i == vanish_after) {
            return status::ok();  // the link closes with `l`, no leave sent
        }
        if (status st = run_step(**l, c, steps[i]); !st) {
            return st;
        }
    }
    leave_node(**l, job, comm, member);
    return status::ok();
}

std::string stop_cleanly(switch_proc& s) {
    std::string out;
    assert_int_equal(stop_switch(s, &out), 0);
    return out;
}

std::vector<status> run_ranks(uint32_t n, const std::function<status(uint32_t)>& rank,
                              const std::function<void()>& meanwhile) {
    std::vector<status> res(n);
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < n; ++r) {
        threads.emplace_back([&, r] { res[r] = rank(r); });
    }
    if (meanwhile) {
        meanwhile();
    }
    for (auto& t : threads) {
        t.join();
    }
    return res;
}

void check_ranks(const std::vector<status>& res) {
    for (size_t r = 0; r < res.size(); ++r) {
        if (!res[r]) {
            LOOM_FAIL("rank " + std::to_string(r) + ": " + res[r].to_string());
        }
    }
}

}  // namespace loom::inc::test
