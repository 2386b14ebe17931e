// Bootstrap: who am I, how many are we, where do we meet; and the variables other launchers
// set that tell the same (read only when loomrun's LOOM_RANK/LOOM_SIZE are not set).
#pragma once

#include "base/params.hh"

namespace loom::bootstrap::params {

extern const loom::params::int_param rank;
extern const loom::params::int_param size;
extern const loom::params::string_param rendezvous;
extern const loom::params::string_param job;
extern const loom::params::real_param timeout;
extern const loom::params::string_param job_secret;
extern const loom::params::string_param listen;
extern const loom::params::real_param linger;
extern const loom::params::int_param ompi_rank;
extern const loom::params::int_param ompi_size;
extern const loom::params::int_param ompi_local_size;
extern const loom::params::string_param ompi_job_id;
extern const loom::params::int_param pmi_rank;
extern const loom::params::int_param pmi_size;
extern const loom::params::int_param mpi_local_nranks;
extern const loom::params::int_param slurm_procid;
extern const loom::params::int_param slurm_ntasks;
extern const loom::params::int_param slurm_step_num_nodes;
extern const loom::params::string_param slurm_job_id;
extern const loom::params::string_param slurm_step_id;
extern const loom::params::int_param pmix_rank;
extern const loom::params::string_param pmix_namespace;
extern const loom::params::int_param pmix_local_size;
extern const loom::params::string_param tmpdir;

/// The declarations above, registered when this component's code is linked.
extern const loom::params::component component;

}  // namespace loom::bootstrap::params
