// SPDX-License-Identifier: Apache-2.0
// Bootstrap: who am I, how many are we, where do we meet; and the variables other launchers
// set that tell the same (read only when loomrun's LOOM_RANK/LOOM_SIZE are not set).
#pragma once

#include "base/params.hh"

namespace loom::bootstrap::params {

using loom::params::flag;

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"bootstrap"};

inline const loom::params::int_param rank{
    component, "LOOM_RANK", "0", "",
    "this process's rank (set by loomrun; with LOOM_SIZE); unset: the launcher's variables (Open "
    "MPI, MPICH, Slurm, PMIx), else rank 0 of 1"};
inline const loom::params::int_param size{
    component, "LOOM_SIZE", "1", "", "number of ranks in the job (set by loomrun; with LOOM_RANK)"};
inline const loom::params::string_param rendezvous{
    component, "LOOM_BOOTSTRAP", "",
    "rendezvous of the job's key/value store: host:port (rank 0 listens there, the others connect) "
    "or file:DIR (a directory all ranks share); unset with several ranks: "
    "file:$TMPDIR/loom-bootstrap-<uid>-<job>, which works when all ranks share one host"};
inline const loom::params::string_param job{
    component, "LOOM_JOB", "",
    "job id shared by all ranks ([A-Za-z0-9._-], names shm segments and the default rendezvous); "
    "unset: the launcher's job id, else derived from the parent process"};
inline const loom::params::real_param timeout{
    component, "LOOM_BOOTSTRAP_TIMEOUT", "30", "s",
    "how long bootstrap waits to reach the rendezvous and for each key"};
inline const loom::params::string_param job_secret{
    component, "LOOM_JOB_SECRET", "",
    "64 hex digits shared by the job's ranks (loomrun sets a fresh one per launch): the TCP "
    "rendezvous authenticates every client with it and does not start without it; the file store "
    "refuses a launch with another secret under the same job id",
    flag::secret};
inline const loom::params::string_param listen{
    component, "LOOM_BOOTSTRAP_LISTEN", "",
    "the address rank 0's TCP rendezvous binds (e.g. 0.0.0.0 for every interface); unset: the host "
    "of LOOM_BOOTSTRAP, which must then be an address of rank 0's host"};
inline const loom::params::real_param linger{
    component, "LOOM_BOOTSTRAP_LINGER", "2", "s",
    "how long rank 0's loom_comm_destroy keeps serving the rendezvous to ranks still connected to "
    "it (destroy never waits longer on other ranks)"};
inline const loom::params::int_param ompi_rank{
    component, "OMPI_COMM_WORLD_RANK", "", "", "Open MPI mpirun: the rank", flag::foreign};
inline const loom::params::int_param ompi_size{
    component, "OMPI_COMM_WORLD_SIZE", "", "", "Open MPI mpirun: the job size", flag::foreign};
inline const loom::params::int_param ompi_local_size{
    component, "OMPI_COMM_WORLD_LOCAL_SIZE",          "",
    "",        "Open MPI mpirun: ranks on this host", flag::foreign};
inline const loom::params::string_param ompi_job_id{component, "OMPI_MCA_ess_base_jobid", "",
                                                    "Open MPI 4 mpirun: the job id", flag::foreign};
inline const loom::params::int_param pmi_rank{
    component, "PMI_RANK", "", "", "MPICH (Hydra) mpiexec: the rank", flag::foreign};
inline const loom::params::int_param pmi_size{
    component, "PMI_SIZE", "", "", "MPICH (Hydra) mpiexec: the job size", flag::foreign};
inline const loom::params::int_param mpi_local_nranks{
    component,    "MPI_LOCALNRANKS", "", "", "MPICH (Hydra) mpiexec: ranks on this host",
    flag::foreign};
inline const loom::params::int_param slurm_procid{component, "SLURM_PROCID",         "",
                                                  "",        "Slurm srun: the rank", flag::foreign};
inline const loom::params::int_param slurm_ntasks{
    component, "SLURM_NTASKS", "", "", "Slurm srun: the job size", flag::foreign};
inline const loom::params::int_param slurm_step_num_nodes{
    component, "SLURM_STEP_NUM_NODES", "", "", "Slurm srun: hosts in the step", flag::foreign};
inline const loom::params::string_param slurm_job_id{component, "SLURM_JOB_ID", "",
                                                     "Slurm: the job id", flag::foreign};
inline const loom::params::string_param slurm_step_id{
    component, "SLURM_STEP_ID", "", "Slurm srun: the step id within the job", flag::foreign};
inline const loom::params::int_param pmix_rank{
    component,    "PMIX_RANK", "", "", "PMIx launchers (prterun, srun --mpi=pmix): the rank",
    flag::foreign};
inline const loom::params::string_param pmix_namespace{
    component, "PMIX_NAMESPACE", "", "PMIx launchers: the job's namespace", flag::foreign};
inline const loom::params::int_param pmix_local_size{
    component, "PMIX_LOCAL_SIZE", "", "", "PMIx launchers: ranks on this host", flag::foreign};
inline const loom::params::string_param tmpdir{
    component, "TMPDIR", "/tmp", "where the default file rendezvous lives", flag::foreign};

}  // namespace loom::bootstrap::params
