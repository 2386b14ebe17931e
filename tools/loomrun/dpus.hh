// SPDX-License-Identifier: Apache-2.0
// loomrun --dpu: one loom-dpu process (tools/loom-dpu) per node of --fabric, wired into the
// fabric's lattice by memif pairs, each with a host port per rank of its node. Started
// before the ranks and waited for (every DPU's ready file: its server ports listen), stopped
// with SIGTERM after the ranks (each prints its statistics). The sockets live in a fresh
// 0700 directory, and every port carries a memif secret drawn per job, so only the job's
// processes can attach.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.hh"

namespace loom::loomrun {

class dpu_set {
  public:
    /// Starts one loom-dpu per node of `fabric` (a lattice) and waits until each listens.
    /// With `inc`, each is also an in-network aggregation node (loom-dpu --aggregate: a leaf
    /// per DPU, the root on node 0's): the node key (0600) and the tree's fabric file go in
    /// the job's directory, and environment() gives the ranks LOOM_SWITCH,
    /// LOOM_SWITCH_FABRIC and LOOM_INC_TICKET. `extra` goes to every loom-dpu (--dpu-arg).
    static result<std::unique_ptr<dpu_set>> start(const std::string& fabric,
                                                  const std::string& job_id, bool inc,
                                                  const std::vector<std::string>& extra);
    ~dpu_set();
    dpu_set(const dpu_set&)            = delete;
    dpu_set& operator=(const dpu_set&) = delete;

    const std::string& dir() const { return dir_; }
    const std::string& secret() const { return secret_; }
    /// --inc: the ranks' LOOM_SWITCH, LOOM_SWITCH_FABRIC and LOOM_INC_TICKET (else empty).
    const std::vector<std::string>& environment() const { return env_; }
    /// (pid, node) of each DPU, so the job can name one that dies.
    std::vector<std::pair<pid_t, int>> pids() const;
    /// Ends the DPUs (SIGTERM, then SIGKILL after `grace_s`) and reaps them.
    void stop(double grace_s);

  private:
    dpu_set() = default;
    status launch(int node, const std::string& fabric, const std::vector<std::string>& extra);
    /// --inc: the tree as a fabric file (ranks → their DPU's leaf → the root) in dir_.
    status write_tree(int ranks);

    std::vector<pid_t> pids_;  // by node
    std::string dir_, secret_;
    std::vector<std::string> env_;
    bool inc_  = false;
    int nodes_ = 0;
};

}  // namespace loom::loomrun
