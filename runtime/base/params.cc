#include "params.hh"

#include <cstdlib>
#include <sstream>

namespace loom::params {
namespace {

// The declarations. Keep this table the single source: the README's environment table
// and `--config` output are printed from it.
std::vector<param> declarations() {
    return {
        {"LOOM_LOG_LEVEL", type::choice, "warn", "", "error|warn|info|debug|trace",
         "how much loom logs to stderr"},
        {"LOOM_PORT_MODEL", type::choice, "per-edge", "", "per-edge|single-port",
         "cost-model port model: every rank pair has its own full-duplex link (per-edge, as "
         "the reference texts assume) or each rank has one full-duplex port into a switch"},
        {"LOOM_SELF_MAX_OPS", type::integer, "4096", "operations", "",
         "operations the self driver keeps posted at once; more is LOOM_ERR_NO_RESOURCE"},
        {"LOOM_SHM_SLOT_BYTES", type::integer, "4096", "bytes", "",
         "shm ring slot size (power of two, 256..1048576); a message up to the slot less its "
         "64-byte header goes eagerly through the ring, a longer one by rendezvous"},
        {"LOOM_SHM_RING_SLOTS", type::integer, "64", "slots", "",
         "slots per ordered pair of ranks in the shm rings (power of two, 2..65536)"},
        {"LOOM_SHM_UNEXPECTED", type::integer, "128", "messages", "",
         "per-peer shm pool for messages that arrive before their receive (eager copies and "
         "rendezvous descriptors); when full, the sender waits in the ring (back-pressure)"},
        {"LOOM_SHM_MAX_OPS", type::integer, "4096", "operations", "",
         "operations one shm endpoint keeps posted at once; more is LOOM_ERR_NO_RESOURCE"},
        {"LOOM_SHM_BOUNCE_BYTES", type::integer, "1048576", "bytes", "",
         "per-pair shared bounce buffer for large shm messages when single-copy "
         "process_vm_readv (CMA) is not permitted (power of two, at least 4096)"},
        {"LOOM_SHM_CMA", type::choice, "auto", "", "auto|off",
         "large shm messages by single-copy process_vm_readv: auto (when a connect-time probe "
         "succeeds) or off (always the bounce buffer)"},
        {"LOOM_SHM_LIVENESS_MS", type::real, "5", "ms", "",
         "how often shm checks that a peer process is alive while operations toward it are "
         "pending"},
        // tcp driver (drivers/tcp/tcp.hh).
        {"LOOM_TCP_ADDR", type::string, "", "", "",
         "IPv4 address the tcp driver listens on and publishes (as tcp/<rank> in the job's "
         "key/value store); unset: the address of LOOM_TCP_IFACE, else the host's first "
         "non-loopback IPv4 address that is up, else 127.0.0.1"},
        {"LOOM_TCP_IFACE", type::string, "", "", "",
         "network interface (e.g. eth0, veth1) whose IPv4 address tcp listens on when "
         "LOOM_TCP_ADDR is unset; an interface without one is an error"},
        {"LOOM_TCP_EAGER_LIMIT", type::integer, "65536", "bytes", "",
         "largest tcp message sent eagerly (header and payload at once); larger ones wait for "
         "the receive (rendezvous) and land in its buffer with no intermediate copy; all ranks "
         "must agree"},
        {"LOOM_TCP_SEND_QUEUE", type::integer, "1024", "messages", "",
         "tcp sends in flight per peer; one more is LOOM_ERR_NO_RESOURCE; all ranks must agree"},
        {"LOOM_TCP_MAX_MESSAGES", type::integer, "16384", "messages", "",
         "tcp receives posted plus early arrivals held per endpoint; beyond, post_recv is "
         "LOOM_ERR_NO_RESOURCE and reading a connection pauses until one completes"},
        {"LOOM_TCP_UNEXPECTED_BYTES", type::integer, "268435456", "bytes", "",
         "memory tcp may hold for eager messages that arrive before their receive; beyond, "
         "reading that connection pauses until a receive takes one (back-pressure)"},
        {"LOOM_TCP_SOCKBUF", type::integer, "0", "bytes", "",
         "SO_SNDBUF and SO_RCVBUF of tcp connections; 0 keeps the kernel's autotuning"},
        // fault wrapper (drivers/fault/fault.hh): faults on sends, off by default.
        {"LOOM_FAULT_DROP", type::real, "0", "probability", "",
         "chance that fault:<driver> drops a send (reported sent, never posted)"},
        {"LOOM_FAULT_DUP", type::real, "0", "probability", "",
         "chance that fault:<driver> posts a send twice (messages up to the eager limit)"},
        {"LOOM_FAULT_REORDER", type::real, "0", "probability", "",
         "chance that fault:<driver> holds a send back and posts it after the next one"},
        {"LOOM_FAULT_DELAY_US", type::integer, "0", "us", "",
         "how long fault:<driver> holds every send before posting it"},
        {"LOOM_FAULT_SEED", type::integer, "1", "", "",
         "seed of fault:<driver>'s decisions (mixed with the rank)"},
        {"LOOM_FAULT_MAX_OPS", type::integer, "65536", "operations", "",
         "operations in flight through fault:<driver>; one more is LOOM_ERR_NO_RESOURCE"},
        // in-network aggregation (runtime/comm/inc_offload.hh, tools/loom-switch).
        {"LOOM_SWITCH", type::string, "", "", "",
         "aggregation node(s) of in-network collectives: one address for every rank "
         "(tcp:HOST:PORT or shm:NAME), or ID=ADDR,ID=ADDR naming the in-network switches of "
         "LOOM_SWITCH_FABRIC; unset: no in-network algorithm (loomrun --switch sets it)"},
        {"LOOM_SWITCH_FABRIC", type::string, "", "", "",
         "fabric file whose switches (with their parents) form the aggregation tree: each rank "
         "uses the in-network switch it is linked to"},
        {"LOOM_INC_TICKET", type::string, "", "", "",
         "JOB:HEX, this job's ticket at its aggregation node(s): proves the joins and names "
         "the node's job (loomrun --switch sets it; `loom-switch ticket` prints one)"},
        {"LOOM_INC_SLOTS", type::integer, "16", "slots", "",
         "aggregation slots a communicator asks its node for (the window of 8 KiB chunks in "
         "flight per rank)"},
        {"LOOM_INC_DROP", type::real, "0", "probability", "",
         "chance that a packet this rank sends to its aggregation node is dropped (the fault "
         "wrapper of the inc link, G14; the node's own loss is loom-switch --drop)"},
        {"LOOM_INC_DUP", type::real, "0", "probability", "",
         "chance that a packet this rank sends to its aggregation node is sent twice"},
        {"LOOM_INC_REORDER", type::real, "0", "probability", "",
         "chance that a packet to the aggregation node is held back and sent after the next"},
        {"LOOM_INC_DETERMINISTIC", type::integer, "1", "", "",
         "1: the node reduces contributions in rank order (bitwise reproducible float sums); "
         "0: in arrival order"},
        // forwarding wrapper (drivers/forward/forward.hh): routes over a lattice.
        {"LOOM_FABRIC", type::string, "", "", "",
         "shape fwd:<driver> routes over (torus:4x4, mesh:3x3, ring:8); endpoint_config.fabric "
         "overrides"},
        {"LOOM_ROUTE_TIES", type::choice, "toward-plus", "", "toward-plus|source-parity",
         "which way fwd:<driver> takes an antipodal tie on an even wrapping dimension"},
        {"LOOM_FWD_CHUNK", type::integer, "65536", "bytes", "",
         "largest chunk fwd:<driver> cuts a message into (forwarded cut-through, chunk by chunk)"},
        {"LOOM_FWD_BUFFERS", type::integer, "64", "chunks", "",
         "chunk buffers a fwd:<driver> rank forwards through, split evenly (at least 2 each) "
         "over its output channels (port and dateline VC); a chunk whose channel has none "
         "free waits, its payload in the inner driver (back-pressure)"},
        {"LOOM_FWD_MAX_OPS", type::integer, "4096", "operations", "",
         "operations and chunks in flight through a fwd:<driver> rank; when chunks run out, "
         "arriving headers wait (back-pressure) and new operations get LOOM_ERR_NO_RESOURCE"},
        // Communicators and the C API (runtime/comm).
        {"LOOM_TRANSPORT", type::string, "", "", "",
         "driver of a new communicator: shm, tcp, self, fault:<driver> or fwd:<driver> (routes "
         "over LOOM_FABRIC; needs LOOM_PROGRESS=thread); unset: self for one rank, shm "
         "otherwise (loom_config_t.transport overrides)"},
        {"LOOM_LINK_STATS_DIR", type::string, "", "", "",
         "directory where the world communicator of a fwd:<driver> transport writes its link "
         "counters at loom_comm_destroy, as rank-<r>.txt (set by loomrun --link-stats)"},
        {"LOOM_TIMEOUT", type::real, "60", "s", "",
         "default deadline of every call on a communicator (loom_config_t.timeout_s and the "
         "per-call attribute override it)"},
        {"LOOM_PROGRESS", type::choice, "caller", "", "caller|thread",
         "who advances calls: the caller inside loom_test/wait/progress, or a progress thread "
         "per communicator"},
        {"LOOM_ALGO", type::string, "", "", "",
         "algorithm per primitive, prim=name(;prim=name)*, e.g. "
         "allreduce=rabenseifner;alltoall=pairwise; an unknown or inapplicable name is an "
         "error listing the allowed ones; unset: the tuner chooses by predicted cost"},
        // Tuner (runtime/tuner): the parameters it predicts with and how it reports.
        {"LOOM_CALIBRATION_FILE", type::string, "", "", "",
         "the calibration file (one line per host and transport: alpha, BW, reduction "
         "throughput); unset: $XDG_CACHE_HOME/loom/calibration.txt, else "
         "~/.cache/loom/calibration.txt"},
        {"LOOM_CALIBRATE", type::choice, "auto", "", "auto|off",
         "auto: a communicator whose host and transport have no line in the calibration file "
         "measures alpha and BW (ranks 0 and 1, tens of ms) and rank 0 writes it; off: never "
         "measure, use the file's line or the built-in defaults"},
        {"LOOM_EXPLAIN", type::integer, "0", "", "",
         "1: rank 0 prints every new algorithm choice with the candidates, their predicted "
         "times and why the others were excluded (as loom_comm_explain)"},
        {"LOOM_TOPOLOGY", type::string, "", "", "",
         "the logical fabric shape the algorithms see (star:N, ring:N, torus:AxB, mesh:AxB); "
         "unset: star:<size>"},
        {"LOOM_MAX_INFLIGHT", type::integer, "16", "calls", "",
         "calls in flight at once on one communicator (1..4096); one more is "
         "LOOM_ERR_NO_RESOURCE"},
        {"LOOM_PLAN_CACHE", type::integer, "64", "plans", "",
         "compiled schedules a communicator keeps (by primitive, algorithm, count, dtype, op, "
         "root, segments, channels); when full it starts afresh"},
        // Bootstrap (runtime/bootstrap/identity.cc): who am I, how many are we, where do we meet.
        {"LOOM_RANK", type::integer, "0", "", "",
         "this process's rank (set by loomrun; with LOOM_SIZE); unset: the launcher's variables "
         "(Open MPI, MPICH, Slurm, PMIx), else rank 0 of 1"},
        {"LOOM_SIZE", type::integer, "1", "", "",
         "number of ranks in the job (set by loomrun; with LOOM_RANK)"},
        {"LOOM_BOOTSTRAP", type::string, "", "", "",
         "rendezvous of the job's key/value store: host:port (rank 0 listens there, the others "
         "connect) or file:DIR (a directory all ranks share); unset with several ranks: "
         "file:$TMPDIR/loom-bootstrap-<uid>-<job>, which works when all ranks share one host"},
        {"LOOM_JOB", type::string, "", "", "",
         "job id shared by all ranks ([A-Za-z0-9._-], names shm segments and the default "
         "rendezvous); unset: the launcher's job id, else derived from the parent process"},
        {"LOOM_BOOTSTRAP_TIMEOUT", type::real, "30", "s", "",
         "how long bootstrap waits to reach the rendezvous and for each key"},
        {"LOOM_JOB_SECRET", type::string, "", "", "",
         "64 hex digits shared by the job's ranks (loomrun sets a fresh one per launch): the TCP "
         "rendezvous authenticates every client with it and does not start without it; the "
         "file store refuses a launch with another secret under the same job id"},
        {"LOOM_BOOTSTRAP_LISTEN", type::string, "", "", "",
         "the address rank 0's TCP rendezvous binds (e.g. 0.0.0.0 for every interface); unset: "
         "the host of LOOM_BOOTSTRAP, which must then be an address of rank 0's host"},
        {"LOOM_BOOTSTRAP_LINGER", type::real, "2", "s", "",
         "how long rank 0's loom_comm_destroy keeps serving the rendezvous to ranks still "
         "connected to it (destroy never waits longer on other ranks)"},
    };
}

// Variables set by other launchers, read (here, the only getenv) to find rank, size and job
// when loomrun did not set LOOM_RANK/LOOM_SIZE (runtime/bootstrap/identity.cc). Their values
// are checked by that reader: they are not loom's settings, so a bad one does not fail load.
std::vector<param> foreign_declarations() {
    return {
        {"OMPI_COMM_WORLD_RANK", type::integer, "", "", "", "Open MPI mpirun: the rank"},
        {"OMPI_COMM_WORLD_SIZE", type::integer, "", "", "", "Open MPI mpirun: the job size"},
        {"OMPI_COMM_WORLD_LOCAL_SIZE", type::integer, "", "", "",
         "Open MPI mpirun: ranks on this host"},
        {"OMPI_MCA_ess_base_jobid", type::string, "", "", "", "Open MPI 4 mpirun: the job id"},
        {"PMI_RANK", type::integer, "", "", "", "MPICH (Hydra) mpiexec: the rank"},
        {"PMI_SIZE", type::integer, "", "", "", "MPICH (Hydra) mpiexec: the job size"},
        {"MPI_LOCALNRANKS", type::integer, "", "", "", "MPICH (Hydra) mpiexec: ranks on this host"},
        {"SLURM_PROCID", type::integer, "", "", "", "Slurm srun: the rank"},
        {"SLURM_NTASKS", type::integer, "", "", "", "Slurm srun: the job size"},
        {"SLURM_STEP_NUM_NODES", type::integer, "", "", "", "Slurm srun: hosts in the step"},
        {"SLURM_JOB_ID", type::string, "", "", "", "Slurm: the job id"},
        {"SLURM_STEP_ID", type::string, "", "", "", "Slurm srun: the step id within the job"},
        {"PMIX_RANK", type::integer, "", "", "",
         "PMIx launchers (prterun, srun --mpi=pmix): the rank"},
        {"PMIX_NAMESPACE", type::string, "", "", "", "PMIx launchers: the job's namespace"},
        {"PMIX_LOCAL_SIZE", type::integer, "", "", "", "PMIx launchers: ranks on this host"},
        {"TMPDIR", type::string, "/tmp", "", "", "where the default file rendezvous lives"},
        {"XDG_CACHE_HOME", type::string, "", "", "",
         "where the calibration file lives by default (loom/calibration.txt under it)"},
        {"HOME", type::string, "", "", "",
         "without XDG_CACHE_HOME, the calibration file is ~/.cache/loom/calibration.txt"},
    };
}

bool parse_int(std::string_view v, int64_t* out) {
    if (v.empty()) {
        return false;
    }
    std::string s(v);
    char* end   = nullptr;
    long long x = std::strtoll(s.c_str(), &end, 10);
    if (*end != '\0') {
        return false;
    }
    *out = x;
    return true;
}

bool parse_real(std::string_view v, double* out) {
    if (v.empty()) {
        return false;
    }
    std::string s(v);
    char* end = nullptr;
    double x  = std::strtod(s.c_str(), &end);
    if (*end != '\0') {
        return false;
    }
    *out = x;
    return true;
}

}  // namespace

status validate(const param& p, std::string_view value) {
    switch (p.kind) {
        case type::integer: {
            int64_t x;
            if (!parse_int(value, &x)) {
                return invalid_argument(p.name + "='" + std::string(value) + "' is not an integer");
            }
            return status::ok();
        }
        case type::real: {
            double x;
            if (!parse_real(value, &x)) {
                return invalid_argument(p.name + "='" + std::string(value) + "' is not a number");
            }
            return status::ok();
        }
        case type::boolean:
            if (value == "0" || value == "1" || value == "true" || value == "false") {
                return status::ok();
            }
            return invalid_argument(p.name + "='" + std::string(value) +
                                    "' is not a boolean (0|1|true|false)");
        case type::choice: {
            std::stringstream ss(p.choices);
            std::string item;
            while (std::getline(ss, item, '|')) {
                if (item == value) {
                    return status::ok();
                }
            }
            return invalid_argument(p.name + "='" + std::string(value) + "': allowed values are " +
                                    p.choices);
        }
        case type::string:
            return status::ok();
    }
    return internal_error("unknown parameter type");
}

registry::registry() : params_(declarations()), foreign_(foreign_declarations()) {
    size_t n = params_.size() + foreign_.size();
    values_.reserve(n);
    set_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const param& p  = declaration(i);
        bool is_foreign = i >= params_.size();
        // The only getenv in loom (G8).
        const char* env   = std::getenv(p.name.c_str());
        std::string value = env ? env : p.default_value;
        bool valid        = env != nullptr;
        if (env && !is_foreign) {
            status st = validate(p, value);
            if (!st.is_ok() && load_status_.is_ok()) {
                load_status_ = st;
            }
            if (!st.is_ok()) {
                value = p.default_value;
                valid = false;
            }
        }
        values_.push_back(value);
        set_.push_back(valid);
    }
}

const param& registry::declaration(size_t index) const {
    return index < params_.size() ? params_[index] : foreign_[index - params_.size()];
}

long registry::index_of(std::string_view name) const {
    for (size_t i = 0; i < values_.size(); ++i) {
        if (declaration(i).name == name) {
            return static_cast<long>(i);
        }
    }
    return -1;
}

registry& registry::global() {
    static registry instance;
    return instance;
}

const param* registry::find(std::string_view name) const {
    long i = index_of(name);
    return i < 0 ? nullptr : &declaration(static_cast<size_t>(i));
}

bool registry::is_set(std::string_view name) const {
    long i = index_of(name);
    return i >= 0 && set_[static_cast<size_t>(i)];
}

status registry::set(std::string_view name, std::string_view value) {
    long i = index_of(name);
    if (i < 0) {
        return invalid_argument("unknown parameter " + std::string(name));
    }
    if (status st = validate(declaration(static_cast<size_t>(i)), value); !st.is_ok()) {
        return st;
    }
    values_[static_cast<size_t>(i)] = std::string(value);
    set_[static_cast<size_t>(i)]    = true;
    return status::ok();
}

std::string registry::get_string(std::string_view name) const {
    long i = index_of(name);
    return i < 0 ? std::string() : values_[static_cast<size_t>(i)];
}

int64_t registry::get_int(std::string_view name) const {
    int64_t x = 0;
    parse_int(get_string(name), &x);
    return x;
}

double registry::get_real(std::string_view name) const {
    double x = 0;
    parse_real(get_string(name), &x);
    return x;
}

bool registry::get_bool(std::string_view name) const {
    auto v = get_string(name);
    return v == "1" || v == "true";
}

bool is_secret(std::string_view name) {
    return name == "LOOM_JOB_SECRET" || name == "LOOM_INC_TICKET";
}

std::string registry::describe() const {
    std::ostringstream out;
    for (size_t i = 0; i < params_.size(); ++i) {
        const auto& p = params_[i];
        // Secrets are never printed (a --config listing ends up in logs and bug reports).
        bool hidden = is_secret(p.name) && !values_[i].empty();
        out << p.name << "=" << (hidden ? "(set, not shown)" : values_[i]) << "  (default "
            << p.default_value;
        if (!p.unit.empty()) {
            out << ", " << p.unit;
        }
        if (!p.choices.empty()) {
            out << ", one of " << p.choices;
        }
        out << ")  " << p.description << "\n";
    }
    // Foreign variables only when set: they are context (which launcher started us), not
    // settings, and a list of every launcher's unset variables would hide loom's own.
    for (size_t i = params_.size(); i < values_.size(); ++i) {
        if (set_[i]) {
            out << declaration(i).name << "=" << values_[i] << "  (read from the launcher)  "
                << declaration(i).description << "\n";
        }
    }
    return out.str();
}

}  // namespace loom::params
