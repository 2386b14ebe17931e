// SPDX-License-Identifier: Apache-2.0
/* loom — poll-mode collective communication for switch and torus fabrics.
 *
 * The public C ABI. Only C types cross this boundary (docs/architecture.md#conventions); every
 * fallible call returns a loom_status_t that loom_status_string() turns into text.
 */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <stddef.h>
#include <stdint.h>

/* The functions below are libloom's whole ABI: the library is built with hidden visibility and
 * a version script, so nothing else in it can be linked against. */
#if defined(__GNUC__)
#define LOOM_API __attribute__((visibility("default")))
#else
#define LOOM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes, grouped by class (docs/architecture.md#rule-errors). Values are stable ABI. */
typedef enum loom_status {
    LOOM_SUCCESS              = 0,
    LOOM_IN_PROGRESS          = 1,  /**< a non-blocking operation has not completed yet */
    LOOM_ERR_INVALID_ARGUMENT = 2,  /**< invalid usage: bad pointer, value or combination */
    LOOM_ERR_MISMATCH         = 3,  /**< ranks disagree on a call (primitive, count, dtype) */
    LOOM_ERR_PEER_FAILURE     = 4,  /**< a remote rank died or its connection broke */
    LOOM_ERR_TIMEOUT          = 5,  /**< a deadline passed while waiting */
    LOOM_ERR_NO_RESOURCE      = 6,  /**< a pool, slot or memory limit was reached */
    LOOM_ERR_SYSTEM           = 7,  /**< an operating-system call failed */
    LOOM_ERR_INTERNAL         = 8,  /**< an invariant of loom itself broke (a bug) */
    LOOM_ERR_NOT_SUPPORTED    = 9,  /**< valid, but not available here (constraint, build) */
    LOOM_ERR_NOT_APPLICABLE   = 10, /**< an algorithm's constraints exclude this call */
    LOOM_ERR_PARSE            = 11, /**< malformed text: schedule, topology, parameter */
    LOOM_ERR_VERIFY           = 12, /**< a schedule failed verification */
} loom_status_t;

/** Returns a static, human-readable name for a status. Never NULL; thread-safe. */
LOOM_API const char* loom_status_string(loom_status_t status);

/** Element types. Values are stable ABI. */
typedef enum loom_dtype {
    LOOM_INT8     = 0,
    LOOM_UINT8    = 1,
    LOOM_INT32    = 2,
    LOOM_UINT32   = 3,
    LOOM_INT64    = 4,
    LOOM_UINT64   = 5,
    LOOM_FLOAT16  = 6,
    LOOM_BFLOAT16 = 7,
    LOOM_FLOAT32  = 8,
    LOOM_FLOAT64  = 9,
    LOOM_DTYPE_COUNT
} loom_dtype_t;

/** Reduction operators. Values are stable ABI. */
typedef enum loom_op {
    LOOM_SUM  = 0,
    LOOM_PROD = 1,
    LOOM_MIN  = 2,
    LOOM_MAX  = 3,
    LOOM_AVG  = 4,
    LOOM_OP_COUNT
} loom_op_t;

/** Collective primitives. Values are stable ABI. */
typedef enum loom_collective {
    LOOM_BROADCAST      = 0,
    LOOM_REDUCE         = 1,
    LOOM_ALLREDUCE      = 2,
    LOOM_REDUCE_SCATTER = 3,
    LOOM_ALLGATHER      = 4,
    LOOM_ALLTOALL       = 5,
    LOOM_SENDRECV       = 6,
    LOOM_COLLECTIVE_COUNT
} loom_collective_t;

/** Size in bytes of one element of @p dtype, or 0 for an unknown type. */
LOOM_API size_t loom_dtype_size(loom_dtype_t dtype);

/** The library version, e.g. "0.1.0". Static string; thread-safe. */
LOOM_API const char* loom_version(void);

/** The optional back ends and whether loom's code for each is built: "name: state; name: state". */
LOOM_API const char* loom_build_features(void);

/* ---------------------------------------------------------------------------------------
 * Communicators, collectives and requests.
 *
 * Conventions shared by every function below:
 *  - Counts are in elements (schedule/collective.hh): broadcast, reduce and allreduce take
 *    the vector length; reduce_scatter and allgather take the FULL vector length, cut into
 *    `size` blocks, the first (count % size) blocks one element longer; alltoall takes the
 *    elements sent to EACH rank.
 *  - In place: pass sendbuf == recvbuf (allgather: sendbuf == recvbuf + the byte offset of
 *    this rank's block). Any other overlap also works (the input is copied aside first).
 *  - Blocking or not: with req == NULL a call returns when it has completed on this rank;
 *    with a request pointer it returns once started, and *req is completed through
 *    loom_test / loom_wait / loom_wait_timeout and then released with loom_request_free.
 *  - Collective calls must be made in the same order on every rank of the communicator, with
 *    the same count, dtype, op, root and algorithm. A disagreement completes the call with
 *    LOOM_ERR_MISMATCH, promptly (not at the deadline), on every rank whose call differs
 *    from a peer it exchanges messages with, and nothing of a mismatched call's message is
 *    ever written into a receive buffer. Without an agreement round this much cannot be
 *    promised: a rank may have written its own contribution and data of peers whose calls
 *    matched its own before it learned of the mismatch, and a rank whose peers all matched
 *    its call (in a broadcast, the subtree of the root it agrees with) may complete.
 *  - One-way roles wait for an acknowledgement: a broadcast root or inner node completes
 *    once its children have, a reduce leaf once its parent has, and loom_send once the
 *    matching loom_recv has completed (a synchronous send). All-reduce, all-gather,
 *    reduce-scatter and all-to-all need none.
 *  - Invalid arguments (NULL buffer with count > 0, unknown dtype or op, root or peer out of
 *    range, count × element size overflowing size_t or the region limit of 2^55 - 1
 *    elements, a bad attribute) return LOOM_ERR_INVALID_ARGUMENT before anything is sent or
 *    written, and consume no sequence number.
 *  - Thread safety: one communicator (and its requests) is used by one thread at a time;
 *    different communicators may be used concurrently from different threads. The
 *    progress thread of LOOM_PROGRESS=thread is internal and needs no care from callers.
 *  - Every failing call records its detail for loom_last_error() on the calling thread.
 *  - A call that fails after it started (peer failure, timeout, mismatch, abort) hands its
 *    buffers back: before the status is returned, everything still posted for the call is
 *    withdrawn from the transport, so no byte is read from or written into them afterwards
 *    (a peer reading a withdrawn message discards it and fails too). Like NCCL after an
 *    asynchronous error, such a communicator is for loom_comm_destroy / loom_comm_abort
 *    only: later calls on it are not guaranteed to succeed.
 * ------------------------------------------------------------------------------------- */

/** A communicator: a group of ranks that run collectives together. Opaque. */
typedef struct loom_comm_s* loom_comm_t;
/** A non-blocking call in flight or completed, until loom_request_free(). Opaque. */
typedef struct loom_request_s* loom_request_t;

/** Who advances non-blocking calls. */
typedef enum loom_progress_mode {
    LOOM_PROGRESS_DEFAULT = 0, /**< LOOM_PROGRESS (caller unless set) */
    LOOM_PROGRESS_CALLER  = 1, /**< inside loom_test / loom_wait / loom_progress */
    LOOM_PROGRESS_THREAD  = 2, /**< a progress thread per communicator */
} loom_progress_mode_t;

/** Color for loom_comm_split(): this rank joins no new communicator (MPI_UNDEFINED). */
#define LOOM_UNDEFINED (-1)

/** How to create a communicator. Initialise with loom_config_init(), then set fields.
 *  ABI versioning: struct_size is sizeof(loom_config_t) of the caller's header; fields
 *  beyond it take their defaults, so older callers keep working when fields are added. */
typedef struct loom_config {
    size_t struct_size;    /**< sizeof(loom_config_t), set by loom_config_init */
    int rank;              /**< this rank; -1: from the environment (LOOM_RANK, mpirun…) */
    int size;              /**< the number of ranks; -1: from the environment */
    const char* bootstrap; /**< "host:port" or "file:DIR"; NULL: LOOM_BOOTSTRAP */
    const char* transport; /**< "shm", "tcp", "ofi", "verbs", "self", "fault:<t>"; NULL:
                                LOOM_TRANSPORT, else "self" for one rank, "shm" when all
                                ranks share a host, else a network transport every rank
                                can run (ofi on a hardware fabric or a network
                                LOOM_OFI_PROVIDER, else tcp) */
    const char* job;       /**< job id shared by all ranks; NULL: LOOM_JOB / launcher */
    const char* topology;  /**< "star:N", "torus:2x4" …; NULL: LOOM_TOPOLOGY, else star */
    double timeout_s;      /**< default deadline of every call; <= 0: LOOM_TIMEOUT */
    loom_progress_mode_t progress; /**< LOOM_PROGRESS_DEFAULT: LOOM_PROGRESS */
    int max_inflight;              /**< non-blocking calls in flight at once; <= 0:
                                        LOOM_MAX_INFLIGHT */
} loom_config_t;

/// Fills *config with the defaults: everything from the environment (rank = size = -1,
/// strings NULL, timeout_s = 0, progress default, max_inflight = 0) and struct_size set.
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT when config is NULL.
/// Thread-safe; never blocks.
LOOM_API loom_status_t loom_config_init(loom_config_t* config);

/// Creates this rank's communicator over all ranks of the job: discovers rank and size
/// (config, else LOOM_RANK/LOOM_SIZE or the launcher's variables), meets the other ranks at
/// the bootstrap rendezvous, opens and connects the transport, and starts the engine.
/// @param config NULL: everything from the environment (as loom_config_init's defaults).
/// @param out    receives the communicator; set to NULL on failure.
/// @return LOOM_SUCCESS; LOOM_ERR_INVALID_ARGUMENT (bad field or LOOM_* value, unknown
///         transport, malformed LOOM_ALGO with the allowed names in the message);
///         LOOM_ERR_TIMEOUT / LOOM_ERR_PEER_FAILURE / LOOM_ERR_SYSTEM when the rendezvous or
///         a peer cannot be reached within the timeout.
/// Collective over the job; blocks until connected or the timeout passes. Thread-safe
/// with respect to other communicators.
LOOM_API loom_status_t loom_comm_create(const loom_config_t* config, loom_comm_t* out);

/// Destroys a communicator: stops its progress thread, closes its transport and frees it.
/// Calls still in flight are failed first (as loom_comm_abort); their requests are freed
/// with it and must not be used afterwards. Local: waits for no other rank, but the job's
/// rendezvous store (kept by rank 0) lingers until every rank has destroyed its
/// communicators or the bootstrap timeout passes.
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT for a NULL comm.
LOOM_API loom_status_t loom_comm_destroy(loom_comm_t comm);

/// Fails every call in flight on this rank's communicator with LOOM_ERR_PEER_FAILURE (the
/// message says it was aborted and why) and marks the communicator unusable: later calls
/// return LOOM_ERR_PEER_FAILURE at once. Returns promptly, even with collectives in flight;
/// other ranks learn of it through their own deadlines, or sooner when the transport sees
/// this process go. Destroy the communicator afterwards: until then, messages that were
/// already posted to the transport may still land in the aborted calls' receive buffers.
/// @param reason a line for the diagnostics (NULL: "loom_comm_abort").
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT for a NULL comm.
/// May be called from any thread, also while another thread waits on the communicator.
LOOM_API loom_status_t loom_comm_abort(loom_comm_t comm, const char* reason);

/// Splits a communicator as MPI_Comm_split does: ranks passing the same color form a new
/// communicator, ranked by (key, parent rank). color == LOOM_UNDEFINED joins none (*out =
/// NULL). The child has its own transport endpoint and engine (same transport kind, but
/// fwd:<driver> becomes <driver>: the child's ranks are no lattice of LOOM_FABRIC; a job id derived
/// from the parent's, addresses exchanged through the parent's rendezvous store), its topology is
/// star:<child size>, and it inherits timeout, progress mode, in-flight limit and LOOM_ALGO.
/// @return LOOM_SUCCESS; LOOM_ERR_INVALID_ARGUMENT (NULL comm or out, color < -1); any
///         status of the (color, key) exchange or of connecting the child.
/// Collective over the parent (one allgather on it, then the child's connect); blocking.
LOOM_API loom_status_t loom_comm_split(loom_comm_t comm, int color, int key, loom_comm_t* out);

/// This rank in the communicator (0 .. size-1), or -1 for a NULL comm. Thread-safe.
LOOM_API int loom_comm_rank(loom_comm_t comm);
/// The number of ranks in the communicator, or -1 for a NULL comm. Thread-safe.
LOOM_API int loom_comm_size(loom_comm_t comm);

/** Traffic on one link between this rank and a physical neighbour (fwd:<driver> only). */
typedef struct loom_link_stat {
    int peer;                /**< the neighbour's rank */
    uint64_t sent_bytes;     /**< payload bytes sent on the link (own and forwarded) */
    uint64_t recv_bytes;     /**< payload bytes received on the link */
    uint64_t sent_msgs;      /**< chunks sent (a message is one or more chunks) */
    uint64_t recv_msgs;      /**< chunks received */
    uint64_t forwarded_msgs; /**< chunks received on the link and sent on toward others */
} loom_link_stat_t;

/// The link counters of a communicator whose transport is fwd:<driver> (LOOM_FABRIC), one
/// entry per neighbour in the fabric's neighbour order; counts since the communicator was
/// created. Writes min(links, max) entries to out and sets *n to the number of links (so
/// max = 0 with out = NULL asks for the count). With LOOM_LINK_STATS_DIR set, the world
/// communicator also writes them to DIR/rank-<r>.txt at loom_comm_destroy.
/// @return LOOM_SUCCESS; LOOM_ERR_INVALID_ARGUMENT (NULL comm or n, max < 0, NULL out with
///         max > 0); LOOM_ERR_NOT_SUPPORTED when the transport is not fwd:<driver>.
/// Local; never blocks. The counters are read while a progress thread may update them: a
/// snapshot, exact only when no call is in flight.
LOOM_API loom_status_t loom_comm_link_stats(loom_comm_t comm, loom_link_stat_t* out, int max,
                                            int* n);

/** Bytes and messages this rank handed to its transport, counted where the engine posts
 *  them to the driver (sends of every call, in-network pushes), since creation. */
typedef struct loom_traffic {
    size_t struct_size;         /**< sizeof(loom_traffic_t), set by the caller */
    uint64_t sent_bytes;        /**< payload bytes posted to peers (software algorithms) */
    uint64_t recv_bytes;        /**< payload bytes received from peers */
    uint64_t sent_msgs;         /**< messages posted to peers */
    uint64_t recv_msgs;         /**< messages received from peers */
    uint64_t switch_sent_bytes; /**< payload bytes pushed to the aggregation node (inc) */
    uint64_t switch_recv_bytes; /**< payload bytes pulled from the aggregation node (inc) */
} loom_traffic_t;

/// This rank's traffic counters (see loom_traffic_t). A snapshot: exact when no call is in
/// flight. Local; never blocks.
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT for NULL arguments or a struct_size
///         smaller than its first field.
LOOM_API loom_status_t loom_comm_traffic(loom_comm_t comm, loom_traffic_t* out);

/** The machine parameters the tuner predicts with (one transport of one host). */
typedef struct loom_calibration {
    size_t struct_size;        /**< sizeof(loom_calibration_t), set by the caller */
    char host[64];             /**< the host they were measured on */
    char transport[32];        /**< "shm", "tcp", "fwd:shm" … */
    double alpha_s;            /**< per-message latency (per round of a collective) */
    double bw_bytes_per_s;     /**< streaming bandwidth per rank, all ranks moving at once */
    double reduce_bytes_per_s; /**< float32 sum throughput of one rank (bytes of input) */
    double alpha_switch_s;     /**< rank to aggregation node latency (inc); alpha_s if none */
    char source[32];           /**< "measured", "file", "defaults" */
    char file[256];            /**< the calibration file read or written ("" none) */
} loom_calibration_t;

/// The parameters this communicator's tuner uses: rank 0's, agreed by every rank when the
/// communicator was created (from LOOM_CALIBRATION_FILE, an automatic light calibration
/// with LOOM_CALIBRATE=auto, or the built-in defaults). Local; never blocks.
LOOM_API loom_status_t loom_comm_calibration(loom_comm_t comm, loom_calibration_t* out);

/// Measures α, BW and the local reduction throughput on this communicator, every rank
/// taking part at once (so α and BW carry what this N costs here): α = the median 8-byte
/// recursive-doubling all-reduce over its rounds; BW = the best large ring all-reduce, less
/// its α and reduction parts, per byte of its closed form; the reduction throughput from
/// the engine's float32 sum kernel. Rank 0 writes them to the calibration file
/// (LOOM_CALIBRATION_FILE, one line per host and transport, replaced atomically) and every
/// rank's tuner adopts rank 0's figures. thorough = 0: a light pass (tens of ms, 1 MiB);
/// 1: a full pass (about a second, 16 MiB). Collective; blocking. With one rank, α and BW
/// keep their values.
LOOM_API loom_status_t loom_comm_calibrate(loom_comm_t comm, int thorough, loom_calibration_t* out);

/** Per-call options. Initialise with loom_coll_attr_init(); struct_size versions the ABI
 *  as in loom_config_t. Pass NULL to a collective for all defaults. */
typedef struct loom_coll_attr {
    size_t struct_size;    /**< sizeof(loom_coll_attr_t), set by loom_coll_attr_init */
    const char* algorithm; /**< e.g. "ring" (loom-sim algorithms lists them); NULL: LOOM_ALGO,
                                else the tuner */
    double timeout_s;      /**< deadline of this call; <= 0: the communicator's */
    int segments;          /**< pipeline segments (1..LOOM_MAX_SEGMENTS); 0: 1 */
    int channels;          /**< independent channels (1..LOOM_MAX_CHANNELS; broadcast, reduce,
                                allreduce, send/recv only); 0: 1 */
} loom_coll_attr_t;

/** Limits of loom_coll_attr_t.segments and .channels; beyond: LOOM_ERR_INVALID_ARGUMENT. */
#define LOOM_MAX_SEGMENTS 1024
#define LOOM_MAX_CHANNELS 64
/** The most ranks a communicator may have (loom_config_t.size, LOOM_SIZE, launchers). */
#define LOOM_MAX_RANKS 65536

/// Fills *attr with the defaults (algorithm NULL, timeout_s 0, segments 0, channels 0).
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT for NULL. Thread-safe.
LOOM_API loom_status_t loom_coll_attr_init(loom_coll_attr_t* attr);

/** One algorithm the tuner weighed for a call (loom_comm_explain). */
typedef struct loom_explain_candidate {
    char algorithm[32]; /**< its name */
    int applicable;     /**< 1: it could run this call; 0: excluded (see reason) */
    double predicted_s; /**< predicted time with the calibrated parameters (< 0: excluded) */
    char reason[160];   /**< excluded: why (not a power of two, needs a torus, no switch…);
                             else its cost formula */
} loom_explain_candidate_t;

#define LOOM_EXPLAIN_MAX_CANDIDATES 32

/** What a call would run and why. */
typedef struct loom_explain {
    size_t struct_size; /**< sizeof(loom_explain_t), set by the caller */
    char algorithm[32]; /**< the algorithm the call runs */
    char origin[32];    /**< "attribute", "LOOM_ALGO", "tuner" */
    double predicted_s; /**< its predicted time */
    int n_candidates;   /**< entries filled in candidates[], fastest applicable first */
    loom_explain_candidate_t candidates[LOOM_EXPLAIN_MAX_CANDIDATES];
} loom_explain_t;

/// Explains the choice for a call of `count` elements (as the primitive's count argument)
/// without running it: every algorithm of the primitive, applicable ones ranked by
/// predicted time, excluded ones with the reason, and the choice (attr->algorithm, else
/// LOOM_ALGO, else the tuner; identical on every rank; the one choice the call itself makes,
/// so the call runs exactly what this reports). `text` (may be NULL) receives the
/// same as a table, truncated to text_size. With LOOM_EXPLAIN=1 every new choice is also
/// logged by rank 0. Local; never blocks; starts no call.
/// @return LOOM_SUCCESS; LOOM_ERR_INVALID_ARGUMENT for NULL comm/out or a bad dtype, op,
///         root or primitive; the error of an explicit choice that cannot run the call.
LOOM_API loom_status_t loom_comm_explain(loom_comm_t comm, loom_collective_t coll, size_t count,
                                         loom_dtype_t dtype, loom_op_t op, int root,
                                         const loom_coll_attr_t* attr, loom_explain_t* out,
                                         char* text, size_t text_size);

/* Algorithm choice, in order: attr->algorithm; else the entry for the primitive in
 * LOOM_ALGO ("prim=name(;prim=name)*", e.g. "allreduce=rabenseifner;alltoall=pairwise";
 * primitives: broadcast, reduce, allreduce, reduce_scatter, allgather, alltoall, sendrecv);
 * else the tuner: the applicable algorithm of least predicted time (closed-form cost at the
 * calibrated α, BW and reduction throughput, on the communicator's topology, with `inc`
 * where an aggregation node admitted the communicator and reduces the dtype and op), cached
 * per size bucket and the same on every rank (loom_comm_explain says why). A barrier is a
 * 1-byte allreduce that takes attr->algorithm, else the tuner's (not LOOM_ALGO).
 * An algorithm named explicitly (attribute or LOOM_ALGO) that cannot run the call fails
 * it on every rank, and nothing is sent: an unknown name with LOOM_ERR_INVALID_ARGUMENT, a
 * name whose constraints exclude the call with LOOM_ERR_NOT_APPLICABLE (among them `inc`
 * without an aggregation node that admitted the communicator, or for a dtype/op the node
 * does not reduce). The message names the algorithm, the reason and the names that would
 * apply. There is no fallback to another algorithm. */

/// Broadcast: `count` elements of sendbuf on `root` land in recvbuf on every rank.
/// sendbuf is read on root only (may be NULL elsewhere); recvbuf is written everywhere
/// (root too; in place when sendbuf == recvbuf).
/// @return LOOM_SUCCESS (blocking: completed; non-blocking: started), or an error status.
LOOM_API loom_status_t loom_broadcast(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                      size_t count, loom_dtype_t dtype, int root,
                                      const loom_coll_attr_t* attr, loom_request_t* req);

/// Reduce: recvbuf on `root` = op over every rank's sendbuf (`count` elements). recvbuf is
/// written on root only (may be NULL elsewhere). LOOM_AVG divides the sum by size.
LOOM_API loom_status_t loom_reduce(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                   size_t count, loom_dtype_t dtype, loom_op_t op, int root,
                                   const loom_coll_attr_t* attr, loom_request_t* req);

/// All-reduce: recvbuf on every rank = op over every rank's sendbuf (`count` elements).
LOOM_API loom_status_t loom_allreduce(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                      size_t count, loom_dtype_t dtype, loom_op_t op,
                                      const loom_coll_attr_t* attr, loom_request_t* req);

/// Reduce-scatter: every sendbuf holds the full vector of `count` elements; recvbuf of rank
/// r receives block r of the reduction (count / size elements, one more on the first
/// count % size ranks; a rank whose block is empty may pass recvbuf NULL).
LOOM_API loom_status_t loom_reduce_scatter(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                           size_t count, loom_dtype_t dtype, loom_op_t op,
                                           const loom_coll_attr_t* attr, loom_request_t* req);

/// All-gather: sendbuf of rank r holds block r of a vector of `count` elements; recvbuf
/// of every rank receives the whole vector (a rank whose block is empty may pass sendbuf
/// NULL). In place: sendbuf = recvbuf + block r's offset.
LOOM_API loom_status_t loom_allgather(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                      size_t count, loom_dtype_t dtype,
                                      const loom_coll_attr_t* attr, loom_request_t* req);

/// All-to-all: sendbuf holds size × count elements, the j-th `count` going to rank j;
/// recvbuf receives size × count, the j-th `count` from rank j.
LOOM_API loom_status_t loom_alltoall(loom_comm_t comm, const void* sendbuf, void* recvbuf,
                                     size_t count, loom_dtype_t dtype, const loom_coll_attr_t* attr,
                                     loom_request_t* req);

/// Point-to-point send of `count` elements to `peer` (not this rank). Messages between one
/// pair of ranks match in order: the k-th send from a to b meets b's k-th receive from a,
/// which must have the same count and dtype (else LOOM_ERR_MISMATCH on both). The send
/// completes when that receive has completed (two ranks blocking in loom_send toward each
/// other wait for their deadline: start one side non-blocking).
LOOM_API loom_status_t loom_send(loom_comm_t comm, const void* buf, size_t count,
                                 loom_dtype_t dtype, int peer, const loom_coll_attr_t* attr,
                                 loom_request_t* req);

/// Point-to-point receive of `count` elements from `peer` (not this rank) into buf.
LOOM_API loom_status_t loom_recv(loom_comm_t comm, void* buf, size_t count, loom_dtype_t dtype,
                                 int peer, const loom_coll_attr_t* attr, loom_request_t* req);

/// Barrier: completes on a rank once every rank has entered it.
LOOM_API loom_status_t loom_barrier(loom_comm_t comm, const loom_coll_attr_t* attr,
                                    loom_request_t* req);

/* ---------------------------------------------------------------------------------------
 * User schedules: a schedule written by hand (text or JSON, docs/schedules.md) run by the
 * engine on real buffers, as the verifier proves it and loom-sim simulates it.
 *
 * A schedule is written for one call: its collective, its N, its count (regions are
 * offsets and lengths in elements of that count) and its root/peer. It runs at that count
 * for any element type; another count needs another schedule.
 * ------------------------------------------------------------------------------------- */

/** A schedule loaded for one communicator. Opaque; valid until loom_schedule_free, which
 *  must come before the communicator's loom_comm_destroy. */
typedef struct loom_schedule_s* loom_schedule_t;

/// Loads a schedule from memory: `text` holds `length` bytes of its text or JSON form (told
/// apart by the first non-blank character, '{' for JSON). Each rank parses and verifies the
/// whole schedule (every output element gets exactly the right contributions, every send
/// its receive, no deadlock) and checks it against the communicator, so all ranks reach the
/// same verdict; every rank loads the same schedule.
/// @return LOOM_SUCCESS (*out set); LOOM_ERR_PARSE for malformed text (the line, or rank,
///         step and key, in the message); LOOM_ERR_VERIFY when the verifier refuses it (its
///         message in loom_last_error_message()); LOOM_ERR_INVALID_ARGUMENT for NULL
///         arguments or a schedule written for another number of ranks;
///         LOOM_ERR_NOT_SUPPORTED for in-network steps without an aggregation node.
/// Local: sends nothing; blocks only for the verification (linear in the schedule's steps).
LOOM_API loom_status_t loom_schedule_load(loom_comm_t comm, const char* text, size_t length,
                                          loom_schedule_t* out);

/// As loom_schedule_load, from a file (a regular file of at most 256 MiB); the messages
/// name the path. LOOM_ERR_SYSTEM when it cannot be read.
LOOM_API loom_status_t loom_schedule_load_file(loom_comm_t comm, const char* path,
                                               loom_schedule_t* out);

/** What a loaded schedule computes, and this rank's buffers (loom_schedule_query). */
typedef struct loom_schedule_info {
    size_t struct_size;           /**< sizeof(loom_schedule_info_t), set by the caller */
    loom_collective_t collective; /**< the primitive it computes */
    int ranks;                    /**< N it is written for (the communicator's size) */
    size_t count;                 /**< the count it runs at (the primitive's count argument) */
    int root;                     /**< broadcast/reduce root; sendrecv source */
    int peer;                     /**< sendrecv destination */
    size_t input_count;           /**< elements this rank's sendbuf must hold (0: may be NULL) */
    size_t output_count;          /**< elements this rank's recvbuf must hold (0: may be NULL) */
} loom_schedule_info_t;

/// Fills *out with what `schedule` computes and the buffers it needs on this rank.
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT for NULL arguments or a struct_size
///         smaller than its first field. Local; never blocks.
LOOM_API loom_status_t loom_schedule_query(loom_schedule_t schedule, loom_schedule_info_t* out);

/// Runs a loaded schedule on real buffers, as the communicator's next collective: every rank
/// calls it in the same order as its other collectives (a rank with no steps too). `coll`
/// and `count` must be the schedule's (its collective and the count it is written for);
/// buffers as the primitive's own call takes them (loom_schedule_query says how many
/// elements); `op` is used where the schedule reduces. attr may give timeout_s; its
/// algorithm must be NULL and segments and channels 0 or 1 (the schedule fixes them).
/// Blocking with req == NULL, else non-blocking as every collective.
/// @return LOOM_SUCCESS (blocking: completed; non-blocking: started);
///         LOOM_ERR_INVALID_ARGUMENT, before anything is sent, for a NULL schedule, another
///         collective or count than the schedule's, an unknown dtype or op, a NULL buffer
///         the schedule uses, or an attribute it cannot honour; LOOM_ERR_MISMATCH when ranks
///         run different schedules (or one at different dtypes); any status of a call.
LOOM_API loom_status_t loom_schedule_run(loom_schedule_t schedule, loom_collective_t coll,
                                         const void* sendbuf, void* recvbuf, size_t count,
                                         loom_dtype_t dtype, loom_op_t op,
                                         const loom_coll_attr_t* attr, loom_request_t* req);

/// Frees a loaded schedule (NULL is allowed and does nothing). Runs still in flight keep
/// what they need; the handle must not be used again. Local; never blocks.
/// @return LOOM_SUCCESS.
LOOM_API loom_status_t loom_schedule_free(loom_schedule_t schedule);

/// Polls a request without blocking (progresses the communicator in caller mode).
/// @param done set to 1 when the request has completed (successfully or not), else 0.
/// @return LOOM_SUCCESS while in flight (*done = 0) or when completed successfully; the
///         call's failure status when it failed (*done = 1); LOOM_ERR_INVALID_ARGUMENT for
///         NULL arguments.
LOOM_API loom_status_t loom_test(loom_request_t req, int* done);

/// Blocks until the request completes or its deadline (the call's timeout) passes, then
/// returns its status (LOOM_ERR_TIMEOUT with a diagnostic when the deadline passed; a
/// collective of more than two ranks then asks every rank where it is, for at most 0.5 s,
/// and names the rank that has not started the call or does not answer). The request stays
/// valid until loom_request_free. A value that is not a live request (garbage, freed, of a
/// destroyed communicator) returns LOOM_ERR_INVALID_ARGUMENT here and in every request call.
LOOM_API loom_status_t loom_wait(loom_request_t req);

/// As loom_wait, with the deadline brought forward to at most `timeout_s` seconds from now.
/// When that passes first, the CALL fails with LOOM_ERR_TIMEOUT (peers are told, as for any
/// timeout) — use loom_test to poll without giving up.
LOOM_API loom_status_t loom_wait_timeout(loom_request_t req, double timeout_s);

/// One pass of progress over the communicator's calls in flight (caller mode; harmless in
/// thread mode). Never blocks.
/// @return LOOM_SUCCESS, or LOOM_ERR_INVALID_ARGUMENT for a NULL comm.
LOOM_API loom_status_t loom_progress(loom_comm_t comm);

/// Releases a completed request (NULL is allowed and does nothing). A freed request must
/// not be used again (a use that is detected returns LOOM_ERR_INVALID_ARGUMENT; the handle
/// may already belong to a newer call).
/// @return LOOM_SUCCESS; LOOM_IN_PROGRESS when it has not completed (nothing freed: wait
///         for it first).
LOOM_API loom_status_t loom_request_free(loom_request_t req);

/** The detail of the calling thread's last error. */
typedef struct loom_error_info {
    size_t struct_size;     /**< sizeof(loom_error_info_t), set by the caller */
    loom_status_t status;   /**< LOOM_SUCCESS when no call on this thread has failed */
    int rank;               /**< the rank that reports it, -1 if none */
    int peer;               /**< the peer it concerns (waited for, failed), -1 if none */
    const char* collective; /**< "allreduce", "send", "barrier" …; "" if none */
    uint32_t seq;           /**< the call's sequence number on its communicator */
    int step;               /**< the schedule step, -1 if none */
    const char* message;    /**< one line naming all of the above */
} loom_error_info_t;

/// The calling thread's last error (set by every loom call that fails, including a request
/// completing with a failure; not cleared by successful calls). Strings stay valid until
/// the next failing loom call on this thread.
/// @param out filled when non-NULL (its struct_size first, as for loom_config_t).
/// @return the last error's status, LOOM_SUCCESS if there was none. Thread-safe.
LOOM_API loom_status_t loom_last_error(loom_error_info_t* out);

/// The calling thread's last error message ("" if none); valid as loom_last_error's.
LOOM_API const char* loom_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_LOOM_H */
