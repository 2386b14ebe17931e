// SPDX-License-Identifier: Apache-2.0
// loomrun --switch (switches.hh).
#include "switches.hh"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/secret.hh"
#include "inc/node/ticket.hh"
#include "loomrun.hh"
#include "topology/fabric.hh"

namespace loom::loomrun {
namespace {

constexpr double ready_timeout_s = 10;

}  // namespace

result<std::string> switch_set::launch(const std::string& listen, const std::string& parent) {
    std::string ready             = dir_ + "/switch-" + std::to_string(pids_.size());
    std::vector<std::string> args = {sibling_program("loom-switch"),
                                     "--listen",
                                     listen,
                                     "--ready-file",
                                     ready,
                                     "--key-file",
                                     dir_ + "/key"};
    if (!parent.empty()) {
        args.insert(args.end(), {"--parent", parent});
    }
    LOOM_ASSIGN(pid_t pid, start_helper_process(args));
    pids_.push_back(pid);
    deadline until(ready_timeout_s);
    while (!until.expired()) {
        std::ifstream in(ready);
        std::string address;
        if (in && std::getline(in, address) && !address.empty()) {
            return address;
        }
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            pids_.pop_back();
            return system_error("--switch: loom-switch exited before it was ready (status " +
                                std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : 128) + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status(LOOM_ERR_TIMEOUT, "--switch: loom-switch did not report its address within " +
                                        std::to_string(int(ready_timeout_s)) + " s");
}

result<std::unique_ptr<switch_set>> switch_set::start(const std::string& fabric,
                                                      const std::string& transport,
                                                      const std::string& job_id) {
    std::unique_ptr<switch_set> s(new switch_set());
    char templ[] = "/tmp/loomrun-switch-XXXXXX";
    if (mkdtemp(templ) == nullptr) {
        return system_error(std::string("--switch: mkdtemp: ") + strerror(errno));
    }
    s->dir_ = templ;
    if (status st = write_node_key(s->dir_ + "/key", job_id, &s->env_); !st) {
        return st.prefix("--switch: ");
    }
    auto listen = [&](const std::string& id) {
        return transport == "shm" ? "shm:" + job_id + "-" + id : std::string("tcp:127.0.0.1:0");
    };
    if (!topology::names_fabric_file(fabric)) {
        LOOM_ASSIGN(std::string addr, s->launch(listen("switch"), ""));
        s->env_.push_back("LOOM_SWITCH=" + addr);
        return s;
    }
    LOOM_ASSIGN(auto f, topology::load_fabric_file(fabric));
    // Parents first: a child is told its parent's address. Roots are the in-network
    // switches without a parent; their children follow level by level.
    std::map<int, std::string> address;
    std::string spec;
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t i = 0; i < f.nodes().size(); ++i) {
            const topology::node& n = f.nodes()[i];
            int id                  = static_cast<int>(i);
            if (!n.in_network || address.count(id) != 0 ||
                (n.parent >= 0 && address.count(n.parent) == 0)) {
                continue;
            }
            LOOM_ASSIGN(address[id],
                        s->launch(listen(n.id), n.parent >= 0 ? address[n.parent] : ""));
            spec += (spec.empty() ? "" : ",") + n.id + "=" + address[id];
            progress = true;
        }
    }
    if (address.empty()) {
        return invalid_argument("--switch: " + fabric + " has no in-network switch");
    }
    s->env_.push_back("LOOM_SWITCH=" + spec);
    s->env_.push_back("LOOM_SWITCH_FABRIC=" + fabric);
    return s;
}

void switch_set::stop(double grace_s) {
    for (pid_t p : pids_) {
        kill(p, SIGTERM);
    }
    deadline until(grace_s);
    for (pid_t p : pids_) {
        int st = 0;
        while (waitpid(p, &st, WNOHANG) == 0) {
            if (until.expired()) {
                kill(p, SIGKILL);
                waitpid(p, &st, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    pids_.clear();
}

status write_node_key(const std::string& path, const std::string& job_id,
                      std::vector<std::string>* env) {
    auto hex = random_secret_hex();
    std::string key;
    if (!hex || !from_hex(*hex, &key)) {
        return system_error("no random node key");
    }
    int fd           = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    std::string text = *hex + "\n";
    bool ok          = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
    ok               = (fd >= 0 && close(fd) == 0) && ok;
    if (!ok) {
        return system_error("cannot write the node key " + path);
    }
    env->push_back(
        "LOOM_INC_TICKET=" +
        inc::ticket_text(std::span(reinterpret_cast<const uint8_t*>(key.data()), key.size()),
                         job_id));
    return status::ok();
}

switch_set::~switch_set() {
    stop(2);
    unlink((dir_ + "/key").c_str());
    for (size_t i = 0; i < 64; ++i) {
        unlink((dir_ + "/switch-" + std::to_string(i)).c_str());
    }
    rmdir(dir_.c_str());
}

}  // namespace loom::loomrun
