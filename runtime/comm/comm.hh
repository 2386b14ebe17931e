// SPDX-License-Identifier: Apache-2.0
// Communicators: the object behind loom_comm_t (docs/architecture.md#how-data-moves, steps 1-3).
//
// A communicator owns one driver endpoint and one engine over it, plus what the C API
// needs between calls: the rendezvous store (shared with the communicators split from it),
// the parsed LOOM_ALGO table, the plan cache and the sequence counters.
//
// The path of a call (communicator::start): argcheck (nothing sent on bad input) → choose
// the algorithm (communicator::choose: attribute, LOOM_ALGO, else the tuner; an explicit
// algorithm that cannot run the call fails it, never a silent fallback) → the plan
// from the cache, or generate_rank + engine::compile → engine::start with the next
// sequence number → (blocking calls) wait.
//
// Sequence numbers: collectives take the communicator's counter, which advances on every
// rank in the same order because collective calls are made in the same order everywhere;
// point-to-point calls take a per-pair counter (sends to b, receives from a), so the k-th
// send from a to b meets b's k-th receive from a. A call that fails before it starts
// consumes no number.
//
// Split: every child has its own endpoint and engine (not the parent's endpoint with a
// different comm id in the tag): an endpoint is owned by one engine (driver.hh), and
// sharing one would need a demultiplexer of completions and control notices between
// engines. The child's addresses go through the parent's store under a key prefix derived
// from (parent job, split number, color), which also names its shm segments.
#pragma once

#include <loom/loom.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/algorithm.hh"
#include "base/kv_store.hh"
#include "base/status.hh"
#include "bootstrap/bootstrap.hh"
#include "comm/flat_offload.hh"
#include "comm/inc_offload.hh"
#include "comm/user_schedule.hh"
#include "drivers/driver.hh"
#include "engine/engine.hh"
#include "routing/dor.hh"
#include "topology/topology.hh"
#include "tuner/tuner.hh"

namespace loom::comm {

/// What the C API calls: the primitives, the two halves of a point-to-point transfer and
/// the barrier.
enum class call_kind : uint8_t {
    broadcast,
    reduce,
    allreduce,
    reduce_scatter,
    allgather,
    alltoall,
    send,
    recv,
    barrier,
};

/// "allreduce", "send", "barrier" …: the names in messages and loom_error_info_t.
const char* kind_name(call_kind k);
/// The schedule primitive that runs a call (send/recv: sendrecv; barrier: allreduce).
schedule::collective primitive_of(call_kind k);
/// True for the kinds that combine values with an op.
bool kind_reduces(call_kind k);

/// One call as the C API received it.
struct call_args {
    call_kind kind      = call_kind::allreduce;
    const void* sendbuf = nullptr;
    void* recvbuf       = nullptr;
    size_t count        = 0;
    // dtype and op as the integers C passed: a value outside the enum is an error to report,
    // and loading it as a C++ enum would be undefined (check_args validates these first).
    int dtype                    = LOOM_FLOAT32;
    int op                       = LOOM_SUM;
    int root                     = 0;   // broadcast, reduce
    int peer                     = -1;  // send, recv
    const loom_coll_attr_t* attr = nullptr;
};

/// The dtype and op of a call that passed check_args.
inline loom_dtype_t dtype_of(const call_args& a) {
    return static_cast<loom_dtype_t>(a.dtype);
}
inline loom_op_t op_of(const call_args& a) {
    return static_cast<loom_op_t>(a.op);
}

/// The per-call attribute after versioning and defaults.
struct call_options {
    std::string_view algorithm;  // empty: LOOM_ALGO, else the default rule (the
                                 // attribute's string, valid while the call starts)
    double timeout_s = -1;       // < 0: the communicator's
    int segments     = 1;
    int channels     = 1;
};

// argcheck.cc ---------------------------------------------------------------------------

/// Checks a call against the C API's rules (loom.h) on a communicator of `size` ranks where
/// this is `rank`, and resolves its attribute. LOOM_ERR_INVALID_ARGUMENT names the argument.
status check_args(const call_args& a, int rank, int size, call_options* out);

/// Resolves a versioned struct's size: ok when `struct_size` is at least the first field
/// and at most ours; a newer caller's larger struct is LOOM_ERR_NOT_SUPPORTED.
status check_struct_size(size_t struct_size, size_t ours, const char* what);
/// True when the caller's struct (of `struct_size` bytes) contains the field ending at
/// `field_end` (offsetof + sizeof).
inline bool has_field(size_t struct_size, size_t field_end) {
    return struct_size >= field_end;
}

// comm.cc: the call as the algorithms see it ---------------------------------------------

/// What identifies a call's schedule besides its primitive: count, root and peer as the
/// generator sees them (send/recv: root = source, peer = destination; barrier: 1 element).
struct call_shape {
    int64_t count;
    int root, peer;
};
call_shape shape_of(const call_args& a, int rank);

/// The call as a generator sees it, on this communicator's topology.
algorithms::call to_call(const call_args& a, const call_options& o, int rank, int size,
                         const topology::shape& topo, routing::tie_rule ties);

// algo_choice.cc ------------------------------------------------------------------------

/// LOOM_ALGO parsed: one algorithm name per primitive ("" where not given).
class algo_table {
  public:
    /// The one grammar: "" (nothing chosen) or prim=name(;prim=name)*, no spaces, each
    /// primitive at most once, each name in the catalogue for that primitive. Syntax errors
    /// are LOOM_ERR_PARSE, unknown primitives or names LOOM_ERR_INVALID_ARGUMENT; every
    /// message says what is allowed.
    static result<algo_table> parse(std::string_view spec);
    std::string_view for_primitive(schedule::collective c) const {
        return names_[static_cast<int>(c)];
    }

  private:
    std::string names_[schedule::collective_count];
};

/// Checks an algorithm named for `c` by `origin` ("the call's attribute", "LOOM_ALGO"):
/// an unknown name is LOOM_ERR_INVALID_ARGUMENT, one that cannot run this call (its
/// constraints, or an in-network algorithm without a node that carries the call)
/// LOOM_ERR_NOT_APPLICABLE; both messages name the algorithm, the reason and the names that
/// would apply. Never another algorithm in its place.
result<const algorithms::algorithm*> check_named(const algorithms::call& c, std::string_view name,
                                                 std::string_view origin,
                                                 const tuner::in_network_state& inc);

/// The names of the primitive's algorithms that can run `c` here, "a, b, c".
std::string applicable_names(const algorithms::call& c, const tuner::in_network_state& inc);

// last_error.cc -------------------------------------------------------------------------

/// Records a failure for loom_last_error() on this thread; returns st.code().
loom_status_t record_error(const status& st, int rank, const char* collective);
/// Records a failed call (from engine::failure_of).
loom_status_t record_failure(const engine::failure& f, const char* collective);

// comm.cc -------------------------------------------------------------------------------

/// Everything a communicator was created with (after config, environment and defaults).
struct settings {
    int rank = 0;
    int size = 1;
    std::string transport;  // driver name for drivers::open
    // Neither loom_config_t.transport nor LOOM_TRANSPORT named one and there are several
    // ranks: connect() picks it from where the ranks are (transport_choice.cc).
    bool transport_auto = false;
    std::string job;
    // The world communicator's job, which a split keeps (its `job` gets a suffix): the job
    // an aggregation node charges the communicator's slots to.
    std::string world_job;
    topology::shape topo           = topology::shape::star(1);
    routing::tie_rule ties         = routing::tie_rule::toward_plus;  // LOOM_ROUTE_TIES
    double timeout_s               = 60;
    double join_timeout_s          = 30;  // LOOM_BOOTSTRAP_TIMEOUT: connecting waits for peers
    engine::progress_mode progress = engine::progress_mode::caller;
    int max_inflight               = 16;
    int plan_cache                 = 64;
    uint16_t comm_id               = 0;
    algo_table algos;
    // Tuner (comm_tuner.cc): LOOM_CALIBRATION_FILE, LOOM_CALIBRATE, LOOM_EXPLAIN, LOOM_PORT_MODEL.
    std::string calibration_file;
    bool calibrate_auto          = true;
    bool explain                 = false;
    algorithms::port_model ports = algorithms::port_model::per_edge;
    // In-network aggregation (LOOM_SWITCH …; inc_offload.hh): empty switch_address: none.
    std::string switch_address;
    std::string switch_fabric;
    std::string inc_ticket;  // LOOM_INC_TICKET, "JOB:HEX" (inc/node/ticket.hh); empty: none
    int inc_slots          = 16;
    bool inc_deterministic = true;
    double inc_drop = 0, inc_dup = 0, inc_reorder = 0;  // LOOM_INC_DROP/DUP/REORDER
    // The node's flat segment (LOOM_FLAT, LOOM_FLAT_MAX_BYTES; flat_offload.hh).
    bool flat              = true;
    int64_t flat_max_bytes = 16384;
};

/// Resolves a loom_config_t (NULL: all defaults) against the parameter registry.
/// Rank, size and job come from the config or bootstrap::discover(); `bootstrap` receives
/// the rendezvous address and `who` what the store needs (rank, size, job, the secret, the
/// timeout and linger time).
status resolve_settings(const loom_config_t* config, settings* out, std::string* bootstrap,
                        bootstrap::identity* who);

class communicator;

/// A non-blocking call: the handle loom_request_t points to. Handles live in a pool of the
/// communicator sized max_inflight, so starting a call allocates nothing here.
struct request_handle {
    communicator* comm       = nullptr;
    engine::request* r       = nullptr;
    call_kind kind           = call_kind::allreduce;
    uint32_t seq             = 0;
    bool in_use              = false;
    uint32_t generation      = 0;       // request_registry: tells a live handle from a stale one
    uint8_t barrier_bytes[2] = {0, 0};  // a barrier's 1-byte input and output
};

/// A call's compiled plan and what the engine needs to match it across ranks.
struct cached_plan {
    std::shared_ptr<const engine::plan> plan;
    uint64_t signature = 0;
    std::string requested;  // the algorithm name asked for ("": LOOM_ALGO or default)
    const algorithms::algorithm* algo = nullptr;  // what the plan runs
};

class communicator {
  public:
    /// Creates the endpoint and engine for `s` over `store` and connects.
    static result<std::unique_ptr<communicator>> create(settings s,
                                                        std::shared_ptr<kv_store> store);
    ~communicator();
    communicator(const communicator&)            = delete;
    communicator& operator=(const communicator&) = delete;

    int rank() const { return settings_.rank; }
    int size() const { return settings_.size; }
    const settings& config() const { return settings_; }

    /// Checks, plans and starts a call; on success *seq is its sequence number. `handle`
    /// (non-blocking) or `local_bytes` (blocking barrier) supplies a barrier's bytes.
    result<engine::request*> start(const call_args& a, uint8_t* barrier_bytes, uint32_t* seq);
    /// Starts and waits (a blocking call); records the failure for loom_last_error.
    loom_status_t run_blocking(const call_args& a);
    /// Starts a non-blocking call into a pooled handle.
    result<request_handle*> start_nonblocking(const call_args& a);
    /// The loom_request_t value of a handle of this communicator (request_registry).
    loom_request_t handle_value(const request_handle* h) const;

    loom_status_t test(request_handle* h, int* done);
    loom_status_t wait(request_handle* h, double timeout_s);
    loom_status_t free_request(request_handle* h);
    void progress();
    void abort(const std::string& reason);

    /// MPI_Comm_split; *out stays null for color LOOM_UNDEFINED.
    status split(int color, int key, std::unique_ptr<communicator>* out);

    /// True when every rank was admitted by its aggregation node (the `inc` algorithms run).
    bool in_network() const { return inc_ready_; }

    // comm_schedule.cc: a user's schedule on real buffers (loom_schedule_run) -------------
    /// Checks the run against the schedule (user_schedule::plan_for) and starts it as the
    /// communicator's next collective.
    result<engine::request*> start_schedule(user_schedule& s, const schedule_call& call,
                                            uint32_t* seq);
    /// Starts and waits; records the failure for loom_last_error.
    loom_status_t run_schedule_blocking(user_schedule& s, const schedule_call& call);
    /// Starts it into a pooled handle, as start_nonblocking.
    result<request_handle*> start_schedule_nonblocking(user_schedule& s, const schedule_call& call);

    // comm_tuner.cc ----------------------------------------------------------------------
    /// The parameters the tuner uses (rank 0's, agreed at creation or by calibrate).
    const tuner::machine_params& machine() const { return machine_; }
    /// Measures α, BW and the reduction throughput (collective; see loom_comm_calibrate).
    status calibrate(bool thorough);
    /// What a call would run and why, without running it (loom_comm_explain).
    struct explanation {
        tuner::ranking ranking;
        const algorithms::algorithm* chosen = nullptr;
        std::string origin;  // "attribute", "LOOM_ALGO", "tuner"
        double predicted_s = 0;
        std::string text;
    };
    result<explanation> explain(const call_args& a);
    /// This rank's traffic counters (engine::traffic_counters).
    engine::traffic_counters traffic() const { return engine_->traffic(); }

    /// The algorithm of the last call this rank started (nullptr before the first): what
    /// the call ran, for checks that explain says the same.
    const algorithms::algorithm* last_algorithm() const { return last_algorithm_; }

    /// The endpoint's per-neighbour link counters (drivers::endpoint::link_statistics);
    /// not_supported when the endpoint does not forward over a lattice.
    result<std::vector<drivers::link_stat>> link_stats() const;

  private:
    communicator(settings s, std::shared_ptr<kv_store> store);
    status connect();
    /// transport_choice.cc: with settings_.transport_auto, every rank publishes its host
    /// identity; rank 0 picks shm when all share one host, else the first network transport
    /// every rank can run, and says which and why; all ranks take its choice.
    status pick_transport();
    result<cached_plan> plan_for(const call_args& a, const call_options& o);
    result<cached_plan> build_plan(const algorithms::call& c, const algorithms::algorithm& algo,
                                   call_kind kind, loom_dtype_t dtype, loom_op_t op);
    uint32_t* counter_for(const call_args& a);
    /// A free handle of the pool, or why there is none (`what` names the call).
    result<request_handle*> free_handle(const char* what);
    loom_status_t finish(engine::request* r, call_kind kind, loom_status_t code);
    status exchange_colors(int color, int key, std::vector<int>* all);
    // comm_tuner.cc: the parameters agreed at creation, and the tuner's choice per call.
    status agree_machine_params();
    status share_machine_params(std::string* line);
    /// Every rank parses rank 0's `line` (from `path`) and drops choices and plans made
    /// with other figures.
    status adopt_machine_params(const std::string& line, const std::string& path);
    status measure(bool thorough, tuner::machine_params* p);
    std::string read_machine_params(const std::string& path);
    result<std::string> measure_plausibly(const std::string& path, bool thorough,
                                          const char* method);
    void save_calibration(const std::string& path, const tuner::machine_params& p);
    tuner::in_network_state in_network_for(const algorithms::call& c, loom_dtype_t dtype,
                                           loom_op_t op) const;
    const algorithms::algorithm* tuned_choice(const algorithms::call& c, loom_dtype_t dtype,
                                              loom_op_t op);
    // algo_choice.cc: the one choice a call and loom_comm_explain both make.
    struct choice {
        const algorithms::algorithm* algo = nullptr;
        std::string origin;  // "attribute", "LOOM_ALGO", "tuner"
    };
    result<choice> choose(call_kind kind, const algorithms::call& c, std::string_view requested,
                          loom_dtype_t dtype, loom_op_t op);
    // comm_inc.cc: admission at creation (agreed by all ranks) and the per-call fallback.
    void open_in_network();
    /// A call's failure, naming the aggregation node when it is the node that failed (its
    /// link closed), whichever rank noticed first (comm_inc.cc).
    engine::failure naming_failed_node(const engine::failure& f);
    status agree_in_network();
    /// Whether every rank says yes: a one-integer MIN all-reduce by recursive doubling, named
    /// because it runs before the tuner may choose inc or flat (comm.cc). `what` goes into
    /// the error when the all-reduce fails.
    result<bool> all_ranks_agree(bool mine, const std::string& what);
    // comm_flat.cc: the node's flat segment, set up at creation and agreed by all ranks.
    void open_flat();
    status agree_flat();
    /// At destruction, with LOOM_LINK_STATS_DIR set: the world communicator (comm id 0) of a
    /// fwd transport writes DIR/rank-<r>.txt, one line "peer sent_bytes recv_bytes
    /// sent_msgs recv_msgs forwarded" per link.
    void write_link_stats() const;

    struct plan_key {
        uint8_t kind;
        uint64_t requested;  // hash of the requested name (0: none); cached_plan has it
        int64_t count;
        int dtype, op, root, peer, segments, channels;
        bool operator==(const plan_key&) const = default;
    };
    struct plan_key_hash {
        size_t operator()(const plan_key& k) const;
    };

    settings settings_;
    std::shared_ptr<kv_store> store_;
    std::unique_ptr<drivers::endpoint> endpoint_;
    std::unique_ptr<inc_offload> inc_;    // outlives engine_, which polls it
    std::unique_ptr<flat_offload> flat_;  // the same
    bool flat_ready_ = false;
    std::string flat_reason_;  // why not
    bool inc_ready_ = false;
    std::string inc_reason_;  // why not (logged, and in fallback messages)
    std::unique_ptr<engine::engine> engine_;
    tuner::machine_params machine_;
    tuner::decision_cache decisions_;
    std::unordered_map<plan_key, cached_plan, plan_key_hash> plans_;
    std::vector<request_handle> handles_;
    int handle_pool_   = -1;  // request_registry slot of handles_
    uint32_t coll_seq_ = 0;
    std::vector<uint32_t> send_seq_, recv_seq_;  // per peer
    uint32_t splits_                             = 0;
    const algorithms::algorithm* last_algorithm_ = nullptr;
    std::atomic<bool> aborted_{false};
    std::string abort_reason_;
};

/// The 64-bit call signature the engine sends with every message: a hash of (primitive,
/// count, dtype, op, root, peer, algorithm, segments, channels).
uint64_t call_signature(call_kind kind, const algorithms::call& c, std::string_view algorithm,
                        loom_dtype_t dtype, loom_op_t op);

}  // namespace loom::comm
