// SPDX-License-Identifier: Apache-2.0
// loomrun --dpu (dpus.hh).
#include "dpus.hh"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/secret.hh"
#include "loomrun.hh"
#include "switches.hh"
#include "tools/common/dpu_agg_address.hh"
#include "topology/topology.hh"

namespace loom::loomrun {
namespace {

// Every DPU opens its server ports, then waits for its lower neighbours' (memif clients
// connect only to a server that listens): they come up together, within this.
constexpr double ready_timeout_s = 30;

}  // namespace

status dpu_set::launch(int node, const std::string& fabric, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {sibling_program("loom-dpu"),
                                     "--node",
                                     std::to_string(node),
                                     "--fabric",
                                     fabric,
                                     "--dir",
                                     dir_,
                                     "--secret-file",
                                     dir_ + "/secret"};
    if (inc_) {
        args.insert(args.end(), {"--aggregate", "--key-file", dir_ + "/key"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    LOOM_ASSIGN(pid_t pid, start_helper_process(args));
    pids_.push_back(pid);
    return status::ok();
}

status dpu_set::write_tree(int ranks) {
    // One endpoint per rank linked to its node's DPU leaf (one rank per node), every leaf
    // linked to the root: the two-level tree runtime/comm/comm_inc.cc plans from.
    std::string nodes, links;
    auto link = [&](const std::string& a, const std::string& b) {
        links += std::string(links.empty() ? "" : ",\n  ") + "{\"a\": \"" + a + "\", \"b\": \"" +
                 b + "\", \"class\": \"net\", \"alpha\": 1e-6, \"bw\": 25e9}";
    };
    for (int r = 0; r < ranks; ++r) {
        nodes += "{\"id\": \"h" + std::to_string(r) +
                 "\", \"kind\": \"endpoint\", \"rank\": " + std::to_string(r) + "},\n  ";
        link("h" + std::to_string(r), "dpu" + std::to_string(r));
    }
    std::string spec;
    for (int n = 0; n < nodes_; ++n) {
        std::string id = "dpu" + std::to_string(n);
        nodes += "{\"id\": \"" + id +
                 "\", \"kind\": \"switch\", \"in_network\": true, \"parent\": \"root\"},\n  ";
        link(id, "root");
        spec += (spec.empty() ? "" : ",") + id + "=" + dpu::leaf_address(dir_, n);
    }
    nodes += "{\"id\": \"root\", \"kind\": \"switch\", \"in_network\": true}";
    spec += ",root=" + dpu::root_address(dir_);
    std::string text = "{\"format\": \"loom-fabric\", \"version\": 1,\n \"nodes\": [\n  " + nodes +
                       "],\n \"links\": [\n  " + links + "]}\n";
    std::string path = dir_ + "/tree.json";
    int fd           = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok          = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
    ok               = (fd >= 0 && close(fd) == 0) && ok;
    if (!ok) {
        return system_error("--dpu --inc: cannot write the tree " + path);
    }
    env_.push_back("LOOM_SWITCH=" + spec);
    env_.push_back("LOOM_SWITCH_FABRIC=" + path);
    return status::ok();
}

result<std::unique_ptr<dpu_set>> dpu_set::start(const std::string& fabric,
                                                const std::string& job_id, bool inc,
                                                const std::vector<std::string>& extra) {
    auto shape = topology::shape::parse(fabric);
    if (!shape) {
        return status(shape.error()).prefix("--dpu: ");
    }
    std::unique_ptr<dpu_set> s(new dpu_set());
    char templ[] = "/tmp/loomrun-dpu-XXXXXX";  // mkdtemp: 0700, only this user enters
    if (mkdtemp(templ) == nullptr) {
        return system_error(std::string("--dpu: mkdtemp: ") + strerror(errno));
    }
    s->dir_   = templ;
    s->nodes_ = shape->size();
    auto hex  = random_secret_hex();
    if (!hex) {
        return system_error("--dpu: no random memif secret for job " + job_id);
    }
    s->secret_       = hex->substr(0, 24);  // memif's limit
    std::string path = s->dir_ + "/secret";
    int fd           = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    std::string text = s->secret_ + "\n";
    bool ok          = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
    ok               = (fd >= 0 && close(fd) == 0) && ok;
    if (!ok) {
        return system_error("--dpu: cannot write the memif secret " + path);
    }
    s->inc_ = inc;
    if (inc) {
        if (status st = write_node_key(s->dir_ + "/key", job_id, &s->env_); !st) {
            return st.prefix("--dpu --inc: ");
        }
        LOOM_CHECK(s->write_tree(s->nodes_));
    }
    for (int n = 0; n < s->nodes_; ++n) {
        LOOM_CHECK(s->launch(n, fabric, extra));
    }
    deadline until(ready_timeout_s);
    for (int n = 0; n < s->nodes_; ++n) {
        std::string ready = s->dir_ + "/node-" + std::to_string(n) + ".ready";
        struct stat st {};
        while (stat(ready.c_str(), &st) != 0) {
            int ws = 0;
            if (waitpid(s->pids_[size_t(n)], &ws, WNOHANG) == s->pids_[size_t(n)]) {
                s->pids_[size_t(n)] = -1;
                return system_error(
                    "--dpu: the DPU of node " + std::to_string(n) + " (loom-dpu) " +
                    (WIFSIGNALED(ws) ? "was killed by signal " + std::to_string(WTERMSIG(ws))
                                     : "exited with status " + std::to_string(WEXITSTATUS(ws))) +
                    " before it listened");
            }
            if (until.expired()) {
                return status(LOOM_ERR_TIMEOUT, "--dpu: the DPU of node " + std::to_string(n) +
                                                    " did not listen within " +
                                                    std::to_string(int(ready_timeout_s)) +
                                                    " s (no " + ready + ")");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    return s;
}

std::vector<std::pair<pid_t, int>> dpu_set::pids() const {
    std::vector<std::pair<pid_t, int>> out;
    for (size_t n = 0; n < pids_.size(); ++n) {
        out.emplace_back(pids_[n], int(n));
    }
    return out;
}

void dpu_set::stop(double grace_s) {
    for (pid_t p : pids_) {
        if (p > 0) {
            kill(p, SIGTERM);
        }
    }
    deadline until(grace_s);
    for (pid_t p : pids_) {
        int st = 0;
        while (p > 0 && waitpid(p, &st, WNOHANG) == 0) {
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

dpu_set::~dpu_set() {
    stop(2);
    // What the DPUs leave: sockets, ready files, the secret.
    if (DIR* d = opendir(dir_.c_str())) {
        while (dirent* e = readdir(d)) {
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
                unlink((dir_ + "/" + e->d_name).c_str());
            }
        }
        closedir(d);
    }
    rmdir(dir_.c_str());
}

}  // namespace loom::loomrun
