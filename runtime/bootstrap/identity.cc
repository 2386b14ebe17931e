// SPDX-License-Identifier: Apache-2.0
// discover(): rank, size, job and rendezvous from the environment, through the parameter
// registry (the only getenv). The rules are in bootstrap.hh; this file applies them in order:
//   1. LOOM_RANK + LOOM_SIZE (loomrun, or set by hand: always both);
//   2. the first launcher whose rank variable is set: Open MPI, MPICH (Hydra), Slurm (inside
//      an srun step only), PMIx;
//   3. otherwise one rank.
// A partial or inconsistent setting is an invalid-argument error naming the variables.
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <sstream>

#include "base/check.hh"
#include "base/hash.hh"
#include "base/log.hh"
#include "base/params.hh"
#include "base/secret.hh"
#include "bootstrap/bootstrap.hh"
#include "bootstrap/bootstrap_params.hh"
#include "bootstrap/store_internal.hh"

namespace loom::bootstrap {
namespace {

using variable = loom::params::int_param;

struct launcher {
    const char* source;
    const variable* rank_var;
    const variable* size_var;        // nullptr: PMIx exports no size (taken from the others)
    const variable* local_size_var;  // ranks on this host, to refuse the file rule across hosts
};

// In precedence order: under mpirun Open MPI also exports PMIX_RANK, and srun with PMIx
// exports both SLURM_* and PMIX_*; the more specific launcher wins.
constexpr launcher launchers[] = {
    {"openmpi", &params::ompi_rank, &params::ompi_size, &params::ompi_local_size},
    {"mpich", &params::pmi_rank, &params::pmi_size, &params::mpi_local_nranks},
    {"slurm", &params::slurm_procid, &params::slurm_ntasks, nullptr},
    {"pmix", &params::pmix_rank, nullptr, &params::pmix_local_size},
};

// The integer value of a variable, nullopt when unset, an error when malformed.
result<std::optional<int64_t>> read_int(const variable& var) {
    if (!var.is_set()) {
        return std::optional<int64_t>();
    }
    if (status st = loom::params::validate(var.declaration(), var.text()); !st) {
        return invalid_argument("bootstrap: " + st.message());
    }
    return std::optional<int64_t>(var.get());
}

std::string var_text(const loom::params::handle& var) {
    return std::string(var.name()) + "=" + var.text();
}

// Slurm's variables describe this process only inside an srun step: a batch script sees
// SLURM_PROCID=0 and SLURM_NTASKS of the whole allocation, and is not rank 0 of anything.
bool applies(const launcher& l) {
    if (std::string(l.source) == "slurm" && !params::slurm_step_id.is_set()) {
        return false;
    }
    return l.rank_var->is_set();
}

status read_rank_size(identity* me, const launcher** from) {
    const variable* rank_var = &params::rank;
    const variable* size_var = &params::size;
    me->source               = "loomrun";
    *from                    = nullptr;
    if (!rank_var->is_set() && !size_var->is_set()) {
        for (const launcher& l : launchers) {
            if (applies(l)) {
                *from      = &l;
                me->source = l.source;
                rank_var   = l.rank_var;
                // PMIx exports the rank only; the size comes from a launcher that says it.
                size_var = l.size_var                   ? l.size_var
                           : params::ompi_size.is_set() ? &params::ompi_size
                                                        : &params::slurm_ntasks;
                break;
            }
        }
        if (*from == nullptr) {
            me->source = "single";
            return status::ok();
        }
    }
    LOOM_ASSIGN(auto rank, read_int(*rank_var));
    LOOM_ASSIGN(auto size, read_int(*size_var));
    if (rank && !size && *from != nullptr && (*from)->size_var == nullptr) {
        return invalid_argument("bootstrap: " + var_text(*rank_var) +
                                " is set but no launcher variable gives the job size "
                                "(OMPI_COMM_WORLD_SIZE, SLURM_NTASKS): set LOOM_RANK and "
                                "LOOM_SIZE instead");
    }
    if (!rank || !size) {
        const variable* set   = rank ? rank_var : size_var;
        const variable* unset = rank ? size_var : rank_var;
        return invalid_argument("bootstrap: " + var_text(*set) + " is set but " +
                                std::string(unset->name()) + " is not (set both, as loomrun does)");
    }
    // Checked on the 64-bit values, before the narrowing below: 2^32 + 2 must not become 2.
    if (*size > bootstrap::max_ranks) {
        return invalid_argument("bootstrap: " + var_text(*size_var) + " exceeds the limit of " +
                                std::to_string(bootstrap::max_ranks) + " ranks per job");
    }
    if (*size < 1 || *rank < 0 || *rank >= *size) {
        return invalid_argument("bootstrap: " + var_text(*rank_var) +
                                " is not a rank of a job of " + var_text(*size_var) +
                                " (needs 0 <= rank < size)");
    }
    me->rank = static_cast<int>(*rank);
    me->size = static_cast<int>(*size);
    return status::ok();
}

bool valid_job_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

std::string hex_hash(std::string_view text) {
    std::ostringstream out;  // FNV-1a: stable across hosts and builds
    out << std::hex << fnv1a64(text);
    return out.str();
}

// A launcher's job id made safe for file and segment names, short enough for both.
std::string sanitize_job(const std::string& prefix, std::string id) {
    for (char& c : id) {
        c = valid_job_char(c) ? c : '_';
    }
    std::string job = prefix + id;
    return job.size() <= 64 ? job : prefix + "x" + hex_hash(id);
}

// "p<ppid>.<start time>": every local rank of one launch shares its parent (mpirun,
// hydra_pmi_proxy, orted, a shell), whose pid and start time name it uniquely.
std::string parent_job() {
    pid_t parent      = getppid();
    std::string start = detail::process_start_time(parent);
    return "p" + std::to_string(parent) + "." + (start.empty() ? "0" : start);
}

result<std::string> read_job(const identity& me) {
    if (params::job.is_set()) {
        std::string job = params::job.get();
        bool ok         = !job.empty() && job.size() <= 64;
        for (char c : job) {
            ok = ok && valid_job_char(c);
        }
        if (!ok) {
            return invalid_argument("bootstrap: LOOM_JOB='" + job +
                                    "' must be 1..64 characters of [A-Za-z0-9._-]");
        }
        return job;
    }
    if (me.source == "openmpi" && !params::ompi_job_id.get().empty()) {
        return sanitize_job("ompi-", params::ompi_job_id.get());
    }
    if (me.source == "slurm" && !params::slurm_job_id.get().empty()) {
        return sanitize_job("slurm-",
                            params::slurm_job_id.get() + "." + params::slurm_step_id.get());
    }
    if ((me.source == "openmpi" || me.source == "pmix") && !params::pmix_namespace.get().empty()) {
        return sanitize_job("pmix-", params::pmix_namespace.get());
    }
    if (me.source == "single") {
        return "s" + std::to_string(getpid());
    }
    if (params::rendezvous.is_set()) {  // every rank was given the same rendezvous
        return "h" + hex_hash(params::rendezvous.get());
    }
    return parent_job();
}

// The file rule needs one host; refuse it when the launcher says the ranks span several.
status check_one_host(const identity& me, const launcher* from) {
    const variable* var = nullptr;
    bool spans          = false;
    if (from != nullptr && from->local_size_var != nullptr) {
        LOOM_ASSIGN(auto local, read_int(*from->local_size_var));
        var   = from->local_size_var;
        spans = local && *local < me.size;
    } else if (from != nullptr) {  // Slurm: the step's host count
        LOOM_ASSIGN(auto hosts, read_int(params::slurm_step_num_nodes));
        var   = &params::slurm_step_num_nodes;
        spans = hosts && *hosts > 1;
    }
    if (spans) {
        return invalid_argument("bootstrap: the " + std::to_string(me.size) + " ranks of job '" +
                                me.job + "' span several hosts (" + var_text(*var) +
                                "), so the default file rendezvous cannot work: set "
                                "LOOM_BOOTSTRAP=host:port (a port on rank 0's host)");
    }
    return status::ok();
}

result<std::string> read_rendezvous(const identity& me, const launcher* from) {
    if (params::rendezvous.is_set()) {
        std::string address = params::rendezvous.get();
        if (status st = detail::validate_address(address); !st) {
            return invalid_argument("LOOM_BOOTSTRAP: " + st.message());
        }
        return address;
    }
    if (me.size == 1) {
        return std::string();
    }
    LOOM_CHECK(check_one_host(me, from));
    std::string tmp = params::tmpdir.get();
    tmp             = tmp.empty() ? "/tmp" : tmp;
    return "file:" + tmp + "/loom-bootstrap-" + std::to_string(getuid()) + "-" + me.job;
}

// Ranks started by hand (LOOM_RANK/LOOM_SIZE without loomrun) have no launcher job id; the
// parent-process rule would give two jobs started from one shell the same id, and a file
// rendezvous would merge them. Only a TCP rendezvous (its port and secret are the launch's
// own) may do without LOOM_JOB.
status check_hand_started(const identity& me) {
    if (me.source != "loomrun" || me.size == 1 || params::job.is_set() ||
        !me.bootstrap.starts_with("file:")) {
        return status::ok();
    }
    return invalid_argument(
        "bootstrap: LOOM_RANK and LOOM_SIZE are set but LOOM_JOB is not, and the rendezvous is "
        "a file store (" +
        me.bootstrap +
        "): two jobs started this way from one shell would meet there and merge; set LOOM_JOB "
        "to a name unique to this launch on every rank (loomrun does), or use loomrun");
}

result<std::string> read_secret() {
    std::string secret = params::job_secret.get();
    if (!secret.empty()) {
        LOOM_CHECK(check_secret(secret));
    }
    return secret;
}

}  // namespace

status check_secret(std::string_view hex) {
    std::string raw;
    if (hex.size() != 64 || !from_hex(hex, &raw)) {
        return invalid_argument(
            "bootstrap: LOOM_JOB_SECRET must be 64 hex digits (32 random bytes, the same on "
            "every rank), e.g. export LOOM_JOB_SECRET=$(openssl rand -hex 32); it has " +
            std::to_string(hex.size()) + " characters" +
            (hex.size() == 64 ? " that are not all hex digits" : ""));
    }
    return status::ok();
}

status read_store_settings(identity* me) {
    LOOM_ASSIGN(me->secret, read_secret());
    me->listen    = params::listen.get();
    me->timeout_s = params::timeout.get();
    if (!(me->timeout_s > 0)) {
        return invalid_argument("bootstrap: LOOM_BOOTSTRAP_TIMEOUT=" + params::timeout.text() +
                                " must be positive");
    }
    me->linger_s = params::linger.get();
    if (!(me->linger_s >= 0)) {
        return invalid_argument("bootstrap: LOOM_BOOTSTRAP_LINGER=" + params::linger.text() +
                                " must be 0 or more seconds");
    }
    return status::ok();
}

result<identity> discover() {
    if (!loom::params::registry::global().load_status()) {
        // An invalid LOOM_* value is never silently ignored.
        return loom::params::registry::global().load_status();
    }
    identity me;
    const launcher* from = nullptr;
    LOOM_CHECK(read_rank_size(&me, &from));
    LOOM_ASSIGN(me.job, read_job(me));
    LOOM_ASSIGN(me.bootstrap, read_rendezvous(me, from));
    LOOM_CHECK(check_hand_started(me));
    LOOM_CHECK(read_store_settings(&me));
    LOOM_LOG_INFO(log::subsystem::init, "rank %d of %d (from %s), job %s, rendezvous '%s'", me.rank,
                  me.size, me.source.c_str(), me.job.c_str(), me.bootstrap.c_str());
    return me;
}

}  // namespace loom::bootstrap
