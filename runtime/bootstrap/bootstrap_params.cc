#include "bootstrap_params.hh"

namespace loom::bootstrap::params {

using loom::params::flag;

constinit const loom::params::int_param rank{
    "LOOM_RANK", "0", "",
    "this process's rank (set by loomrun; with LOOM_SIZE); unset: the launcher's variables (Open "
    "MPI, MPICH, Slurm, PMIx), else rank 0 of 1"};
constinit const loom::params::int_param size{
    "LOOM_SIZE", "1", "", "number of ranks in the job (set by loomrun; with LOOM_RANK)"};
constinit const loom::params::string_param rendezvous{
    "LOOM_BOOTSTRAP", "",
    "rendezvous of the job's key/value store: host:port (rank 0 listens there, the others connect) "
    "or file:DIR (a directory all ranks share); unset with several ranks: "
    "file:$TMPDIR/loom-bootstrap-<uid>-<job>, which works when all ranks share one host"};
constinit const loom::params::string_param job{
    "LOOM_JOB", "",
    "job id shared by all ranks ([A-Za-z0-9._-], names shm segments and the default rendezvous); "
    "unset: the launcher's job id, else derived from the parent process"};
constinit const loom::params::real_param timeout{
    "LOOM_BOOTSTRAP_TIMEOUT", "30", "s",
    "how long bootstrap waits to reach the rendezvous and for each key"};
constinit const loom::params::string_param job_secret{
    "LOOM_JOB_SECRET", "",
    "64 hex digits shared by the job's ranks (loomrun sets a fresh one per launch): the TCP "
    "rendezvous authenticates every client with it and does not start without it; the file store "
    "refuses a launch with another secret under the same job id",
    flag::secret};
constinit const loom::params::string_param listen{
    "LOOM_BOOTSTRAP_LISTEN", "",
    "the address rank 0's TCP rendezvous binds (e.g. 0.0.0.0 for every interface); unset: the host "
    "of LOOM_BOOTSTRAP, which must then be an address of rank 0's host"};
constinit const loom::params::real_param linger{
    "LOOM_BOOTSTRAP_LINGER", "2", "s",
    "how long rank 0's loom_comm_destroy keeps serving the rendezvous to ranks still connected to "
    "it (destroy never waits longer on other ranks)"};
constinit const loom::params::int_param ompi_rank{"OMPI_COMM_WORLD_RANK", "", "",
                                                  "Open MPI mpirun: the rank", flag::foreign};
constinit const loom::params::int_param ompi_size{"OMPI_COMM_WORLD_SIZE", "", "",
                                                  "Open MPI mpirun: the job size", flag::foreign};
constinit const loom::params::int_param ompi_local_size{
    "OMPI_COMM_WORLD_LOCAL_SIZE", "", "", "Open MPI mpirun: ranks on this host", flag::foreign};
constinit const loom::params::string_param ompi_job_id{
    "OMPI_MCA_ess_base_jobid", "", "Open MPI 4 mpirun: the job id", flag::foreign};
constinit const loom::params::int_param pmi_rank{"PMI_RANK", "", "",
                                                 "MPICH (Hydra) mpiexec: the rank", flag::foreign};
constinit const loom::params::int_param pmi_size{
    "PMI_SIZE", "", "", "MPICH (Hydra) mpiexec: the job size", flag::foreign};
constinit const loom::params::int_param mpi_local_nranks{
    "MPI_LOCALNRANKS", "", "", "MPICH (Hydra) mpiexec: ranks on this host", flag::foreign};
constinit const loom::params::int_param slurm_procid{"SLURM_PROCID", "", "", "Slurm srun: the rank",
                                                     flag::foreign};
constinit const loom::params::int_param slurm_ntasks{"SLURM_NTASKS", "", "",
                                                     "Slurm srun: the job size", flag::foreign};
constinit const loom::params::int_param slurm_step_num_nodes{
    "SLURM_STEP_NUM_NODES", "", "", "Slurm srun: hosts in the step", flag::foreign};
constinit const loom::params::string_param slurm_job_id{"SLURM_JOB_ID", "", "Slurm: the job id",
                                                        flag::foreign};
constinit const loom::params::string_param slurm_step_id{
    "SLURM_STEP_ID", "", "Slurm srun: the step id within the job", flag::foreign};
constinit const loom::params::int_param pmix_rank{
    "PMIX_RANK", "", "", "PMIx launchers (prterun, srun --mpi=pmix): the rank", flag::foreign};
constinit const loom::params::string_param pmix_namespace{
    "PMIX_NAMESPACE", "", "PMIx launchers: the job's namespace", flag::foreign};
constinit const loom::params::int_param pmix_local_size{
    "PMIX_LOCAL_SIZE", "", "", "PMIx launchers: ranks on this host", flag::foreign};
constinit const loom::params::string_param tmpdir{
    "TMPDIR", "/tmp", "where the default file rendezvous lives", flag::foreign};

const loom::params::component component{"bootstrap",
                                        {&rank,
                                         &size,
                                         &rendezvous,
                                         &job,
                                         &timeout,
                                         &job_secret,
                                         &listen,
                                         &linger,
                                         &ompi_rank,
                                         &ompi_size,
                                         &ompi_local_size,
                                         &ompi_job_id,
                                         &pmi_rank,
                                         &pmi_size,
                                         &mpi_local_nranks,
                                         &slurm_procid,
                                         &slurm_ntasks,
                                         &slurm_step_num_nodes,
                                         &slurm_job_id,
                                         &slurm_step_id,
                                         &pmix_rank,
                                         &pmix_namespace,
                                         &pmix_local_size,
                                         &tmpdir}};

}  // namespace loom::bootstrap::params
