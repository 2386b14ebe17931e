// SPDX-License-Identifier: Apache-2.0
// --hosts netns: each rank in its own network namespace, so the tcp driver runs between
// separately addressed hosts. Topology (one run, pid P, N ranks):
//
//   namespace loom-P-k:  eth0 10.77.0.(k+1)/24  ──veth──  lmPhk (host side)  ─┐
//                                                                              ├─ bridge lmbP
//   (the bridge has no address: nothing of this is reachable from the host)  ─┘
//
// Every change is made with iproute2's `ip`, the tool an administrator would use to inspect
// or remove it by hand. Teardown deletes the host-side veth explicitly before the namespace:
// the kernel removes a namespace's links asynchronously, and the caller (and the netns test)
// expects them gone when loomrun exits.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

#include "base/check.hh"
#include "loomrun.hh"

namespace loom::loomrun {
namespace {

constexpr const char* netns_dir = "/run/netns";  // where `ip netns add` pins namespaces
constexpr int max_netns_ranks   = 253;           // host numbers 1..253 of 10.77.0.0/24

// Runs `ip ARGS`; on failure the status quotes ip's own complaint.
status run_ip(const std::vector<std::string>& args) {
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
        return system_error(std::string("pipe: ") + std::strerror(errno));
    }
    std::vector<char*> argv{const_cast<char*>("ip")};
    for (const auto& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        execvp("ip", argv.data());
        dprintf(STDERR_FILENO, "cannot execute ip: %s", std::strerror(errno));
        _exit(127);
    }
    close(err_pipe[1]);
    std::string complaint;
    char buf[512];
    ssize_t n;
    while ((n = read(err_pipe[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
        complaint.append(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    }
    close(err_pipe[0]);
    int wstatus = 0;
    while (pid > 0 && waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (pid > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
        return status::ok();
    }
    std::string line = "ip";
    for (const auto& a : args) {
        line += " " + a;
    }
    while (!complaint.empty() && (complaint.back() == '\n' || complaint.back() == ' ')) {
        complaint.pop_back();
    }
    std::replace(complaint.begin(), complaint.end(), '\n', ' ');
    return system_error(line + " failed" + (complaint.empty() ? "" : ": " + complaint));
}

// A leftover's owner is gone when no process has its pid, or the one that has it now is not
// a loomrun (the pid was reused).
bool owner_gone(pid_t pid) {
    if (pid == getpid()) {
        return false;
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return true;
    }
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(comm, name);
    return name != "loomrun";
}

std::vector<std::string> list_dir(const char* path) {
    std::vector<std::string> names;
    if (DIR* d = opendir(path)) {
        while (dirent* e = readdir(d)) {
            names.emplace_back(e->d_name);
        }
        closedir(d);
    }
    return names;
}

// Matches `name` against <head><digits>[<sep><digits>] (no separator: nothing may follow
// the first number) and returns the numbers; how leftovers are recognised by their names.
bool take_digits(std::string_view name, std::string_view head, std::string* first,
                 std::string_view sep, std::string* second) {
    auto digits = [](std::string_view s) {
        size_t n = 0;
        while (n < s.size() && s[n] >= '0' && s[n] <= '9' && n < 9) {
            ++n;
        }
        return n;
    };
    if (!name.starts_with(head)) {
        return false;
    }
    name.remove_prefix(head.size());
    size_t n = digits(name);
    if (n == 0) {
        return false;
    }
    *first = std::string(name.substr(0, n));
    name.remove_prefix(n);
    if (sep.empty()) {
        return name.empty();
    }
    if (!name.starts_with(sep)) {
        return false;
    }
    name.remove_prefix(sep.size());
    n       = digits(name);
    *second = std::string(name.substr(0, n));
    return n > 0 && n == name.size();
}

}  // namespace

netns_hosts::netns_hosts(int ranks)
    : ranks_(ranks),
      owner_(getpid()),
      bridge_("lmb" + std::to_string(owner_)),
      ns_fds_(static_cast<size_t>(ranks), -1) {}

std::string netns_hosts::ns_name(int rank) const {
    return "loom-" + std::to_string(owner_) + "-" + std::to_string(rank);
}

// Interface names are at most 15 bytes: "lm" + pid (≤ 7 digits) + "h" + rank (≤ 3).
std::string netns_hosts::veth_name(int rank) const {
    return "lm" + std::to_string(owner_) + "h" + std::to_string(rank);
}

std::string netns_hosts::address(int rank) const {
    return "10.77.0." + std::to_string(rank + 1);
}

result<std::unique_ptr<netns_hosts>> netns_hosts::create(int ranks) {
    if (ranks > max_netns_ranks) {
        return invalid_argument("--hosts netns supports at most " +
                                std::to_string(max_netns_ranks) + " ranks (one /24), not " +
                                std::to_string(ranks));
    }
    if (geteuid() != 0) {
        return invalid_argument(
            "--hosts netns needs root (it creates network namespaces, veth links and a "
            "bridge); run as root or use --hosts local");
    }
    if (status st = run_ip({"netns", "list"}); !st) {
        return not_supported("--hosts netns needs iproute2's ip with netns support: " +
                             st.message());
    }
    if (int n = remove_stale(); n > 0) {
        std::fprintf(stderr, "loomrun: removed %d namespaces/links left by killed runs\n", n);
    }
    std::unique_ptr<netns_hosts> hosts(new netns_hosts(ranks));
    if (status st = hosts->set_up(); !st) {
        return system_error("--hosts netns: " + st.message());  // the destructor tidies up
    }
    return hosts;
}

status netns_hosts::set_up() {
    LOOM_CHECK(run_ip({"link", "add", bridge_, "type", "bridge"}));
    bridge_made_ = true;
    LOOM_CHECK(run_ip({"link", "set", bridge_, "up"}));
    for (int k = 0; k < ranks_; ++k) {
        std::string ns = ns_name(k), veth = veth_name(k);
        LOOM_CHECK(run_ip({"netns", "add", ns}));
        made_ = k + 1;
        LOOM_CHECK(
            run_ip({"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns}));
        LOOM_CHECK(run_ip({"link", "set", veth, "master", bridge_, "up"}));
        LOOM_CHECK(run_ip({"-n", ns, "addr", "add", address(k) + "/24", "dev", "eth0"}));
        LOOM_CHECK(run_ip({"-n", ns, "link", "set", "eth0", "up"}));
        LOOM_CHECK(run_ip({"-n", ns, "link", "set", "lo", "up"}));
        std::string pin                 = std::string(netns_dir) + "/" + ns;
        ns_fds_[static_cast<size_t>(k)] = open(pin.c_str(), O_RDONLY | O_CLOEXEC);
        if (ns_fds_[static_cast<size_t>(k)] < 0) {
            return system_error("cannot open " + pin + ": " + std::strerror(errno));
        }
    }
    return status::ok();
}

status netns_hosts::enter(int rank) const {
    std::string ns = ns_name(rank);
    if (setns(ns_fds_[static_cast<size_t>(rank)], CLONE_NEWNET) != 0) {
        return system_error("cannot enter network namespace " + ns + ": " + std::strerror(errno));
    }
    // Slave propagation first, so the /sys remount stays in this rank's mount namespace.
    if (unshare(CLONE_NEWNS) != 0 || mount("", "/", "none", MS_SLAVE | MS_REC, nullptr) != 0 ||
        umount2("/sys", MNT_DETACH) != 0 || mount(ns.c_str(), "/sys", "sysfs", 0, nullptr) != 0) {
        return system_error("cannot mount the /sys of network namespace " + ns + ": " +
                            std::strerror(errno));
    }
    return status::ok();
}

netns_hosts::~netns_hosts() {
    tear_down();
}

void netns_hosts::tear_down() {
    for (int k = made_ - 1; k >= 0; --k) {
        if (ns_fds_[static_cast<size_t>(k)] >= 0) {
            close(ns_fds_[static_cast<size_t>(k)]);
        }
        (void)run_ip({"link", "del", veth_name(k)});  // absent if set_up stopped before it
        if (status st = run_ip({"netns", "del", ns_name(k)}); !st) {
            std::fprintf(stderr, "loomrun: warning: %s\n", st.message().c_str());
        }
    }
    if (bridge_made_) {
        if (status st = run_ip({"link", "del", bridge_}); !st) {
            std::fprintf(stderr, "loomrun: warning: %s\n", st.message().c_str());
        }
    }
    made_        = 0;
    bridge_made_ = false;
}

int netns_hosts::remove_stale() {
    int removed = 0;
    for (const auto& name : list_dir(netns_dir)) {
        std::string pid, rank;  // loom-<pid>-<rank>
        if (take_digits(name, "loom-", &pid, "-", &rank) && owner_gone(std::stoi(pid))) {
            (void)run_ip({"link", "del", "lm" + pid + "h" + rank});
            removed += run_ip({"netns", "del", name}).is_ok();
        }
    }
    for (const auto& name : list_dir("/sys/class/net")) {
        std::string pid, rank;  // lmb<pid> or lm<pid>h<rank>
        if ((take_digits(name, "lmb", &pid, "", nullptr) ||
             take_digits(name, "lm", &pid, "h", &rank)) &&
            owner_gone(std::stoi(pid))) {
            removed += run_ip({"link", "del", name}).is_ok();
        }
    }
    return removed;
}

}  // namespace loom::loomrun
