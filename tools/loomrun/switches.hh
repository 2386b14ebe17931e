// SPDX-License-Identifier: Apache-2.0
// loomrun --switch: the aggregation nodes (loom-switch processes) a job's ranks use for
// in-network collectives. Started before the ranks, parents before their children, each
// reporting its address through a ready file; stopped (SIGTERM, so each prints its
// statistics) after the ranks are done.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.hh"

namespace loom::loomrun {

/// Writes a fresh node key to `path` (0600, created: never an existing file) and appends the
/// ranks' LOOM_INC_TICKET for `job_id` to `env`. One key for every node of a job's tree (a
/// child proves its joins to its parent with the same ticket); the ranks get the ticket,
/// never the key. Used by --switch and --dpu --inc.
status write_node_key(const std::string& path, const std::string& job_id,
                      std::vector<std::string>* env);

class switch_set {
  public:
    /// `fabric`: "" or star:N (one node for every rank) or a fabric file (one node per
    /// in-network switch, each told its parent). `transport` picks tcp or shm links.
    static result<std::unique_ptr<switch_set>> start(const std::string& fabric,
                                                     const std::string& transport,
                                                     const std::string& job_id);
    ~switch_set();
    /// LOOM_SWITCH (and LOOM_SWITCH_FABRIC for a tree) and LOOM_INC_TICKET for every rank.
    std::vector<std::string> environment() const { return env_; }
    /// Ends the nodes (SIGTERM, then SIGKILL after `grace_s`) and reaps them.
    void stop(double grace_s);

  private:
    switch_set() = default;
    result<std::string> launch(const std::string& listen, const std::string& parent);

    std::vector<pid_t> pids_;
    std::vector<std::string> env_;
    std::string dir_;  // ready files
};

}  // namespace loom::loomrun
