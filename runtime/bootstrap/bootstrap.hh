// SPDX-License-Identifier: Apache-2.0
// Rank discovery and address exchange (docs/architecture.md#layout: runtime/bootstrap).
//
// Who am I and how many are we: LOOM_RANK/LOOM_SIZE (loomrun), or the variables Open MPI
// (OMPI_COMM_WORLD_RANK/SIZE), MPICH/Hydra (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/
// SLURM_NTASKS) and PMIx (PMIX_RANK + the job size) set, so `mpirun -n 4 ./app` needs no
// loom-specific setup. Where is the rendezvous: LOOM_BOOTSTRAP=host:port (rank 0 serves a
// small TCP key/value store there) or LOOM_BOOTSTRAP=file:DIR (a file store, for tests).
// All variables are read through the parameter registry (runtime/base/params.cc).
//
// The rendezvous rule when LOOM_BOOTSTRAP is unset and there are several ranks (so that
// `mpirun -n 4 ./app` needs nothing loom-specific): a file store in
// $TMPDIR/loom-bootstrap-<uid>-<job> (TMPDIR defaults to /tmp), where <job> is the job id
// below. All ranks of one job on one host compute the same directory; when the launcher says
// the ranks span several hosts, discover() refuses and asks for LOOM_BOOTSTRAP=host:port.
//
// The job id: LOOM_JOB; else Open MPI's OMPI_MCA_ess_base_jobid, Slurm's
// SLURM_JOB_ID.SLURM_STEP_ID, PMIX_NAMESPACE; else (MPICH's Hydra exports none, nor does a
// shell that sets LOOM_RANK by hand) "h<hash of LOOM_BOOTSTRAP>" when that is set, else
// "p<parent pid>.<parent start time>": the local launcher daemon (mpirun, hydra_pmi_proxy,
// orted, the shell) is the one parent every local rank shares and is unique while it lives.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/kv_store.hh"
#include "base/status.hh"

namespace loom::bootstrap {

struct identity {
    int rank = 0;
    int size = 1;
    std::string source;  // "loomrun", "openmpi", "mpich", "slurm", "pmix", "config", "single"
    std::string job;     // a job id shared by all ranks (names shm segments)
    // The rendezvous address for connect_store(): LOOM_BOOTSTRAP or the file rule above;
    // empty for a single rank (connect_store then gives an in-process store).
    std::string bootstrap;
    double timeout_s = 30;  // LOOM_BOOTSTRAP_TIMEOUT
    // LOOM_JOB_SECRET: 64 hex digits shared by the job's ranks, empty when unset. The TCP
    // store authenticates every client with it (and refuses to run without one); the file
    // store uses it to tell apart two launches that share a job id.
    std::string secret;
    // LOOM_BOOTSTRAP_LISTEN: the address rank 0's TCP store binds; empty: the host of the
    // rendezvous address itself (never every interface unless asked for).
    std::string listen;
    // LOOM_BOOTSTRAP_LINGER: how long rank 0's store, when destroyed, still serves ranks that
    // are connected to it; destroy never waits on other ranks longer than this.
    double linger_s = 2;
};

/// The most ranks a job may have: sizes beyond it are refused before anything is allocated.
constexpr int max_ranks = 1 << 16;  // LOOM_MAX_RANKS in loom.h

/// What tells this process's host from another's: "host=<hostname> netns=<inode>
/// boot=<boot id>". Two processes share a host when these are equal, so ranks in separate
/// network namespaces (loomrun --hosts netns) count as separate hosts, as do containers of
/// one machine that do not share their network; a part the system does not show is "-".
std::string host_identity();

/// The hostname in a host_identity() text ("host=NAME …"), or the whole text when it has none.
std::string host_of_identity(std::string_view identity);

/// Fills secret, listen, timeout_s and linger_s from LOOM_JOB_SECRET, LOOM_BOOTSTRAP_LISTEN,
/// LOOM_BOOTSTRAP_TIMEOUT and LOOM_BOOTSTRAP_LINGER (discover() does; so does a communicator
/// whose config names rank, size, job and rendezvous itself).
status read_store_settings(identity* me);

/// Checks a LOOM_JOB_SECRET value (64 hex digits); the message names the variable and says
/// how to make one.
status check_secret(std::string_view hex);

/// Reads the identity from the environment (through the registry); an inconsistent or
/// partial setting (rank >= size, rank without size) is an invalid-argument error.
result<identity> discover();

/// Connects to (rank 0: serves) the key/value store named by `address` ("host:port" or
/// "file:DIR"). Unreachable rendezvous, wrong size or a duplicate rank are clear errors
/// within `timeout_s`. An empty address is an in-process store, valid for one rank only.
/// Rank 0's store serves the others for as long as it lives (TCP: its server thread; file:
/// it removes the job's key files when destroyed); destroying it waits for the ranks still
/// using it for at most `me.linger_s`, never longer.
result<std::unique_ptr<kv_store>> connect_store(const std::string& address, const identity& me,
                                                double timeout_s);

/// connect_store(me.bootstrap, me, me.timeout_s).
result<std::unique_ptr<kv_store>> connect_store(const identity& me);

/// What killed launches left of the default file rendezvous: removes this user's directories
/// $TMPDIR/loom-bootstrap-<uid>-* whose every file was written by a process that is gone (or
/// that stayed empty for a minute); returns how many. Rank 0 of a default rendezvous and
/// loomrun call it when they start.
int remove_stale_rendezvous();

/// Removes job `job`'s files from the file rendezvous `dir` (once none of its ranks runs: a
/// killed rank 0 never tidied up), and `dir` itself when nothing else is left in it; returns
/// how many files it removed.
int remove_job_rendezvous(const std::string& dir, const std::string& job);

}  // namespace loom::bootstrap
