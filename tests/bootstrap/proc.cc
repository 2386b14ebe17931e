// SPDX-License-Identifier: Apache-2.0
#include "proc.hh"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "base/clock.hh"
#include "base/net.hh"
#include "test_main.hh"

extern char** environ;

namespace loom::test {
namespace {

int status_code(int wstatus) {
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

// Reads every fd into its string until all reach EOF or the deadline; `on_data` runs after
// each read. Returns false at the deadline.
bool drain(std::vector<int>& fds, std::vector<std::string*>& into, double end_s,
           const std::function<void()>& on_data) {
    for (;;) {
        std::vector<pollfd> p;
        for (int fd : fds) {
            p.push_back({fd, POLLIN, 0});
        }
        bool open = false;
        for (int fd : fds) {
            open = open || fd >= 0;
        }
        if (!open) {
            return true;
        }
        double left = end_s - now_s();
        if (left <= 0) {
            return false;
        }
        poll(p.data(), p.size(), static_cast<int>(std::ceil(left * 1e3)));
        for (size_t i = 0; i < fds.size(); ++i) {
            if (fds[i] < 0 || p[i].revents == 0) {
                continue;
            }
            char buf[4096];
            ssize_t n = read(fds[i], buf, sizeof buf);
            if (n > 0) {
                into[i]->append(buf, static_cast<size_t>(n));
                if (on_data) {
                    on_data();
                }
            } else if (n == 0 || errno != EINTR) {
                close(fds[i]);
                fds[i] = -1;
            }
        }
    }
}

// Waits for `pid` until the deadline, then kills it; the outcome's code.
int reap(pid_t pid, double end_s) {
    int wstatus = 0;
    for (;;) {
        pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid) {
            return status_code(wstatus);
        }
        if (now_s() >= end_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            return -1;
        }
        usleep(2000);
    }
}

}  // namespace

std::vector<outcome> run_ranks(int n, const std::function<int(int, std::string*)>& body,
                               double deadline_s) {
    double end = now_s() + deadline_s;
    std::vector<pid_t> pids;
    std::vector<int> fds;
    std::vector<outcome> out(static_cast<size_t>(n));
    std::vector<std::string*> into;
    for (int k = 0; k < n; ++k) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) {
            abort();
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            std::string report;
            int code = body(k, &report);
            (void)!write(p[1], report.data(), report.size());
            _exit(code);
        }
        close(p[1]);
        pids.push_back(pid);
        fds.push_back(p[0]);
        into.push_back(&out[static_cast<size_t>(k)].text);
    }
    drain(fds, into, end, {});
    for (int k = 0; k < n; ++k) {
        if (fds[static_cast<size_t>(k)] >= 0) {
            close(fds[static_cast<size_t>(k)]);
        }
        out[static_cast<size_t>(k)].code = reap(pids[static_cast<size_t>(k)], end);
    }
    return out;
}

namespace {

pid_t start_program(const program& p, int out_fd, int err_fd) {
    std::vector<std::string> env = p.env;
    if (p.inherit_env) {
        env.clear();
        for (char** e = environ; *e; ++e) {
            env.emplace_back(*e);
        }
        env.insert(env.end(), p.env.begin(), p.env.end());
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        std::vector<char*> argv, envp;
        for (const auto& a : p.argv) {
            argv.push_back(const_cast<char*>(a.c_str()));
        }
        argv.push_back(nullptr);
        for (auto& e : env) {
            envp.push_back(e.data());
        }
        envp.push_back(nullptr);
        execve(argv[0], argv.data(), envp.data());
        dprintf(STDERR_FILENO, "cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

}  // namespace

std::vector<outcome> run_programs(const std::vector<program>& ps, double deadline_s) {
    double start = now_s();
    double end   = start + deadline_s;
    std::vector<outcome> out(ps.size());
    std::vector<pid_t> pids;
    std::vector<int> fds;
    std::vector<std::string*> into;
    for (size_t i = 0; i < ps.size(); ++i) {
        int o[2], e[2];
        if (pipe2(o, O_CLOEXEC) != 0 || pipe2(e, O_CLOEXEC) != 0) {
            abort();
        }
        pids.push_back(start_program(ps[i], o[1], e[1]));
        close(o[1]);
        close(e[1]);
        fds.insert(fds.end(), {o[0], e[0]});
        into.insert(into.end(), {&out[i].text, &out[i].err});
    }
    std::vector<bool> signalled(ps.size(), false);
    drain(fds, into, end, [&] {
        for (size_t i = 0; i < ps.size(); ++i) {
            if (ps[i].signal_number != 0 && !signalled[i] &&
                out[i].text.find(ps[i].signal_after) != std::string::npos) {
                kill(pids[i], ps[i].signal_number);
                signalled[i] = true;
            }
        }
    });
    for (int fd : fds) {
        if (fd >= 0) {
            close(fd);
        }
    }
    for (size_t i = 0; i < ps.size(); ++i) {
        out[i].pid       = pids[i];
        out[i].code      = reap(pids[i], end);
        out[i].elapsed_s = now_s() - start;
    }
    return out;
}

outcome run_program(const program& p, double deadline_s) {
    return run_programs({p}, deadline_s)[0];
}

void expect_all_ok(const std::vector<outcome>& out) {
    std::string text;
    bool ok = true;
    for (size_t k = 0; k < out.size(); ++k) {
        ok = ok && out[k].code == 0;
        text += "rank " + std::to_string(k) + " code " + std::to_string(out[k].code) + ": " +
                out[k].text + out[k].err + "\n";
    }
    if (!ok) {
        LOOM_FAIL(text);
    }
}

bool loomrun_args(int argc, char** argv, std::string* loomrun, std::string* probe) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s LOOMRUN LOOMRUN_PROBE\n", argv[0]);
        return false;
    }
    *loomrun = argv[1];
    *probe   = argv[2];
    return true;
}

int free_port() {
    auto fd  = net::listen_tcp(net::host_port{"127.0.0.1", 0}, 1, false);
    int port = fd ? net::local_port(*fd) : 0;
    if (fd) {
        close(*fd);
    }
    return port;
}

int count_lines_with(const std::string& text, const std::string& needle) {
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
        n += line.find(needle) != std::string::npos;
    }
    return n;
}

}  // namespace loom::test
