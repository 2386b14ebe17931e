// Rank discovery and address exchange (DESIGN.md "Layout": runtime/bootstrap).
//
// Who am I and how many are we: LOOM_RANK/LOOM_SIZE (loomrun), or the variables Open MPI
// (OMPI_COMM_WORLD_RANK/SIZE), MPICH/Hydra (PMI_RANK/PMI_SIZE), Slurm (SLURM_PROCID/
// SLURM_NTASKS) and PMIx (PMIX_RANK + the job size) set, so `mpirun -n 4 ./app` needs no
// loom-specific setup. Where is the rendezvous: LOOM_BOOTSTRAP=host:port (rank 0 serves a
// small TCP key/value store there) or LOOM_BOOTSTRAP=file:DIR (a file store, for tests).
// All variables are read through the parameter registry (runtime/base/params.cc).
#pragma once

#include <memory>
#include <string>

#include "base/kv_store.hh"
#include "base/status.hh"

namespace loom::bootstrap {

struct identity {
    int rank = 0;
    int size = 1;
    std::string source;  // "loomrun", "openmpi", "mpich", "slurm", "pmix", "config", "single"
    std::string job;     // a job id shared by all ranks (names shm segments)
};

/// Reads the identity from the environment (through the registry); an inconsistent or
/// partial setting (rank >= size, rank without size) is an invalid-argument error.
result<identity> discover();

/// Connects to (rank 0: serves) the key/value store named by `address` ("host:port" or
/// "file:DIR"). Unreachable rendezvous, wrong size or a duplicate rank are clear errors
/// within `timeout_s`.
result<std::unique_ptr<kv_store>> connect_store(const std::string& address, const identity& me,
                                                double timeout_s);

}  // namespace loom::bootstrap
