// SPDX-License-Identifier: Apache-2.0
// The communicator: connect, plan (with the per-communicator cache), start, wait.
#include "comm/comm.hh"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/check.hh"
#include "base/hash.hh"
#include "base/log.hh"
#include "base/net.hh"
#include "comm/comm_params.hh"
#include "comm/request_registry.hh"
#include "kernels/reduce.hh"

namespace loom::comm {

call_shape shape_of(const call_args& a, int rank) {
    call_shape s{static_cast<int64_t>(a.count), a.root, 0};
    if (a.kind == call_kind::send) {
        s.root = rank, s.peer = a.peer;
    } else if (a.kind == call_kind::recv) {
        s.root = a.peer, s.peer = rank;
    } else if (a.kind == call_kind::barrier) {
        s.count = 1, s.root = 0;
    } else if (!schedule::has_root(primitive_of(a.kind))) {
        s.root = 0;
    }
    return s;
}

algorithms::call to_call(const call_args& a, const call_options& o, int rank, int size,
                         const topology::shape& topo, routing::tie_rule ties) {
    call_shape s = shape_of(a, rank);
    uint32_t elem =
        a.kind == call_kind::barrier ? 1 : static_cast<uint32_t>(loom_dtype_size(dtype_of(a)));
    return {.coll       = primitive_of(a.kind),
            .nranks     = size,
            .count      = s.count,
            .dtype_size = elem,
            .root       = s.root,
            .peer       = s.peer,
            .segments   = o.segments,
            .channels   = o.channels,
            .ties       = ties,
            .topo       = topo};
}

uint64_t call_signature(call_kind kind, const algorithms::call& c, std::string_view algorithm,
                        loom_dtype_t dtype, loom_op_t op) {
    // send and recv are the two halves of one sendrecv: they must sign alike.
    int prim = kind == call_kind::recv ? static_cast<int>(call_kind::send) : static_cast<int>(kind);
    uint64_t h = splitmix64(static_cast<uint64_t>(prim));
    for (uint64_t v :
         {static_cast<uint64_t>(c.count), static_cast<uint64_t>(dtype),
          static_cast<uint64_t>(kind_reduces(kind) ? op : 0), static_cast<uint64_t>(c.root),
          static_cast<uint64_t>(c.peer), fnv1a64(algorithm), static_cast<uint64_t>(c.segments),
          static_cast<uint64_t>(c.channels)}) {
        h = splitmix64(h ^ v);
    }
    return h;
}

size_t communicator::plan_key_hash::operator()(const plan_key& k) const {
    uint64_t h = splitmix64(k.kind ^ k.requested);
    for (int64_t v : {k.count, int64_t{k.dtype}, int64_t{k.op}, int64_t{k.root}, int64_t{k.peer},
                      int64_t{k.segments}, int64_t{k.channels}}) {
        h = splitmix64(h ^ static_cast<uint64_t>(v));
    }
    return static_cast<size_t>(h);
}

communicator::communicator(settings s, std::shared_ptr<kv_store> store)
    : settings_(std::move(s)), store_(std::move(store)) {
    handles_.resize(static_cast<size_t>(settings_.max_inflight));
    handle_pool_ = request_registry::add_pool(handles_.data(), handles_.size());
    send_seq_.assign(static_cast<size_t>(settings_.size), 0);
    recv_seq_.assign(static_cast<size_t>(settings_.size), 0);
}

communicator::~communicator() {
    if (engine_) {
        // Calls still in flight hold driver operations on user buffers: fail them, then
        // stop the engine (its progress thread) before the endpoint goes.
        engine_->abort(LOOM_ERR_PEER_FAILURE,
                       "rank " + std::to_string(rank()) + ": the communicator was destroyed");
        for (auto& h : handles_) {
            if (h.in_use) {
                engine_->release(h.r);
                h = request_handle{};
            }
        }
        engine_.reset();
    }
    request_registry::remove_pool(handle_pool_);
    if (endpoint_) {
        write_link_stats();
        endpoint_->close();
    }
}

result<std::unique_ptr<communicator>> communicator::create(settings s,
                                                           std::shared_ptr<kv_store> store) {
    std::unique_ptr<communicator> c(new communicator(std::move(s), std::move(store)));
    LOOM_CHECK(c->connect());
    return c;
}

status communicator::connect() {
    if (settings_.transport_auto) {
        LOOM_CHECK(pick_transport());
    }
    drivers::endpoint_config ec;
    ec.rank  = settings_.rank;
    ec.size  = settings_.size;
    ec.job   = settings_.job;
    ec.store = store_.get();
    // Connecting waits for the other ranks to join, as bootstrap does: its deadline is
    // LOOM_BOOTSTRAP_TIMEOUT, not the per-call LOOM_TIMEOUT.
    ec.timeout_s = settings_.join_timeout_s;
    auto ep      = drivers::open(settings_.transport, ec);
    if (!ep) {
        return status(ep.error())
            .prefix("rank " + std::to_string(rank()) + ": transport " + settings_.transport + ": ");
    }
    endpoint_ = std::move(ep).value();
    if (status st = endpoint_->connect(); !st) {
        if (st.code() != LOOM_ERR_TIMEOUT) {
            return st;
        }
        return status(st.code(), st.message() + " (ranks have LOOM_BOOTSTRAP_TIMEOUT, " +
                                     net::seconds_text(settings_.join_timeout_s) + ", to join)");
    }
    open_in_network();
    open_flat();
    engine::engine_config cfg{.rank         = settings_.rank,
                              .size         = settings_.size,
                              .comm_id      = settings_.comm_id,
                              .timeout_s    = settings_.timeout_s,
                              .max_requests = settings_.max_inflight,
                              .progress     = settings_.progress,
                              .in_network   = inc_.get(),
                              .node_local   = flat_.get()};
    LOOM_ASSIGN(engine_, engine::engine::create(cfg, *endpoint_));
    // The flat segment first: a calibration at creation measures its α too.
    LOOM_CHECK(agree_flat());
    LOOM_CHECK(agree_machine_params());
    LOOM_CHECK(agree_in_network());
    // Choices made while admission was open did not know whether `inc` could run.
    decisions_.clear();
    plans_.clear();
    LOOM_LOG_INFO(log::subsystem::init, "rank %d of %d: %s communicator up (job %s, %s)", rank(),
                  size(), settings_.transport.c_str(), settings_.job.c_str(),
                  settings_.topo.to_string().c_str());
    return status::ok();
}

result<cached_plan> communicator::build_plan(const algorithms::call& c,
                                             const algorithms::algorithm& algo, call_kind kind,
                                             loom_dtype_t dtype, loom_op_t op) {
    LOOM_ASSIGN(auto steps, algorithms::generate_rank(algo, c, rank()));
    schedule::schedule_info info = algorithms::schedule_info_for(algo, c);
    cached_plan out;
    out.signature = call_signature(kind, c, algo.name, dtype, op);
    auto p        = engine::compile(info, steps, dtype, out.signature);
    if (!p) {
        return status(p.error()).prefix(std::string(kind_name(kind)) + " " +
                                        std::string(algo.name) + " on rank " +
                                        std::to_string(rank()) + ": ");
    }
    out.plan = std::move(p).value();
    return out;
}

result<cached_plan> communicator::plan_for(const call_args& a, const call_options& o) {
    // Looked up before the algorithm is chosen: the choice is a function of the key (the
    // requested name, LOOM_ALGO fixed per communicator, and the call), so a repeated call
    // costs one hash look-up and no allocation.
    loom_dtype_t dtype = a.kind == call_kind::barrier ? LOOM_UINT8 : dtype_of(a);
    loom_op_t op       = a.kind == call_kind::barrier ? LOOM_MAX : op_of(a);
    call_shape s       = shape_of(a, rank());
    plan_key key{static_cast<uint8_t>(a.kind),
                 o.algorithm.empty() ? 0 : fnv1a64(o.algorithm),
                 s.count,
                 static_cast<int>(dtype),
                 kind_reduces(a.kind) ? static_cast<int>(op) : 0,
                 s.root,
                 s.peer,
                 o.segments,
                 o.channels};
    if (auto it = plans_.find(key); it != plans_.end() && it->second.requested == o.algorithm) {
        return it->second;
    }
    algorithms::call c = to_call(a, o, rank(), size(), settings_.topo, settings_.ties);
    LOOM_ASSIGN(choice chosen, choose(a.kind, c, o.algorithm, dtype, op));
    LOOM_ASSIGN(cached_plan built, build_plan(c, *chosen.algo, a.kind, dtype, op));
    built.requested = std::string(o.algorithm);
    built.algo      = chosen.algo;
    // Calls in flight keep their plans alive (shared_ptr), so starting afresh is safe.
    if (plans_.size() >= static_cast<size_t>(settings_.plan_cache)) {
        plans_.clear();
    }
    plans_.insert_or_assign(key, built);
    return built;
}

uint32_t* communicator::counter_for(const call_args& a) {
    if (a.kind == call_kind::send) {
        return &send_seq_[static_cast<size_t>(a.peer)];
    }
    if (a.kind == call_kind::recv) {
        return &recv_seq_[static_cast<size_t>(a.peer)];
    }
    return &coll_seq_;
}

result<engine::request*> communicator::start(const call_args& a, uint8_t* barrier_bytes,
                                             uint32_t* seq) {
    if (aborted_.load(std::memory_order_acquire)) {
        return status(LOOM_ERR_PEER_FAILURE, std::string(kind_name(a.kind)) + " on rank " +
                                                 std::to_string(rank()) +
                                                 ": the communicator was aborted");
    }
    call_options o;
    LOOM_CHECK(check_args(a, rank(), size(), &o));
    LOOM_ASSIGN(cached_plan cp, plan_for(a, o));
    engine::call_buffers b{.input  = a.sendbuf,
                           .output = a.recvbuf,
                           .dtype  = dtype_of(a),
                           .op     = kind_reduces(a.kind) ? op_of(a) : LOOM_SUM};
    if (a.kind == call_kind::barrier) {
        barrier_bytes[0] = 0;
        b.input = barrier_bytes, b.output = barrier_bytes + 1;
        b.dtype = LOOM_UINT8, b.op = LOOM_MAX;
    }
    uint32_t* counter = counter_for(a);
    bool p2p          = a.kind == call_kind::send || a.kind == call_kind::recv;
    LOOM_ASSIGN(auto r, engine_->start(cp.plan, b, *counter, p2p, o.timeout_s));
    *seq            = (*counter)++;
    last_algorithm_ = cp.algo;
    return r;
}

loom_status_t communicator::finish(engine::request* r, call_kind kind, loom_status_t code) {
    if (code != LOOM_SUCCESS) {
        record_failure(naming_failed_node(engine_->failure_of(r)), kind_name(kind));
    }
    return code;
}

result<bool> communicator::all_ranks_agree(bool mine, const std::string& what) {
    int32_t vote = mine ? 1 : 0, all = 0;
    // Named, because an explicit `inc` or `flat` (LOOM_ALGO) cannot run before it is agreed.
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.algorithm = "recursive-doubling";
    call_args a;
    a.attr    = &attr;
    a.kind    = call_kind::allreduce;
    a.sendbuf = &vote;
    a.recvbuf = &all;
    a.count   = 1;
    a.dtype   = LOOM_INT32;
    a.op      = LOOM_MIN;
    if (loom_status_t code = run_blocking(a); code != LOOM_SUCCESS) {
        return status(code, "rank " + std::to_string(rank()) + ": agreeing on " + what + " failed");
    }
    return all == 1;
}

loom_status_t communicator::run_blocking(const call_args& a) {
    uint8_t barrier_bytes[2];
    uint32_t seq = 0;
    auto r       = start(a, barrier_bytes, &seq);
    if (!r) {
        return record_error(r.error(), rank(), kind_name(a.kind));
    }
    loom_status_t code = finish(*r, a.kind, engine_->wait(*r, -1));
    engine_->release(*r);
    return code;
}

result<request_handle*> communicator::free_handle(const char* what) {
    auto free_slot = std::find_if(handles_.begin(), handles_.end(),
                                  [](const request_handle& slot) { return !slot.in_use; });
    if (handle_pool_ < 0) {
        return status(LOOM_ERR_NO_RESOURCE, std::string(what) + " on rank " +
                                                std::to_string(rank()) +
                                                ": more than 4096 communicators hold requests");
    }
    if (free_slot == handles_.end()) {
        return status(LOOM_ERR_NO_RESOURCE, std::string(what) + " on rank " +
                                                std::to_string(rank()) + ": " +
                                                std::to_string(handles_.size()) +
                                                " requests are not freed yet (LOOM_MAX_INFLIGHT)");
    }
    return &*free_slot;
}

result<request_handle*> communicator::start_nonblocking(const call_args& a) {
    LOOM_ASSIGN(request_handle * h, free_handle(kind_name(a.kind)));
    LOOM_ASSIGN(h->r, start(a, h->barrier_bytes, &h->seq));
    h->comm       = this;
    h->kind       = a.kind;
    h->generation = request_registry::next_generation();
    h->in_use     = true;
    return h;
}

loom_request_t communicator::handle_value(const request_handle* h) const {
    return request_registry::encode(handle_pool_, static_cast<size_t>(h - handles_.data()),
                                    h->generation);
}

loom_status_t communicator::test(request_handle* h, int* done) {
    loom_status_t code = engine_->test(h->r);
    *done              = code == LOOM_IN_PROGRESS ? 0 : 1;
    return code == LOOM_IN_PROGRESS ? LOOM_SUCCESS : finish(h->r, h->kind, code);
}

loom_status_t communicator::wait(request_handle* h, double timeout_s) {
    return finish(h->r, h->kind, engine_->wait(h->r, timeout_s));
}

loom_status_t communicator::free_request(request_handle* h) {
    if (engine_->test(h->r) == LOOM_IN_PROGRESS) {
        return LOOM_IN_PROGRESS;  // not an error: nothing freed, the call goes on
    }
    engine_->release(h->r);
    *h = request_handle{};
    return LOOM_SUCCESS;
}

void communicator::progress() {
    engine_->progress();
}

void communicator::abort(const std::string& reason) {
    aborted_.store(true, std::memory_order_release);  // R: pairs with the acquire in start()
    engine_->abort(LOOM_ERR_PEER_FAILURE,
                   "rank " + std::to_string(rank()) + " aborted the communicator: " + reason);
}

result<std::vector<drivers::link_stat>> communicator::link_stats() const {
    std::vector<drivers::link_stat> stats;
    if (!endpoint_ || !endpoint_->link_statistics(&stats)) {
        return not_supported(
            "link statistics need a fwd:<driver> transport (this "
            "communicator's is '" +
            settings_.transport + "'; set LOOM_FABRIC and LOOM_TRANSPORT=fwd:shm)");
    }
    return stats;
}

void communicator::write_link_stats() const {
    const std::string dir = params::link_stats_dir.get();
    if (dir.empty() || settings_.comm_id != 0) {
        return;
    }
    auto stats = link_stats();
    if (!stats) {
        LOOM_LOG_WARN(log::subsystem::coll, "LOOM_LINK_STATS_DIR: %s",
                      stats.error().message().c_str());
        return;
    }
    const std::string path = dir + "/rank-" + std::to_string(rank()) + ".txt";
    std::FILE* f           = std::fopen(path.c_str(), "w");
    if (!f) {
        LOOM_LOG_WARN(log::subsystem::coll, "LOOM_LINK_STATS_DIR: cannot write %s: %s",
                      path.c_str(), std::strerror(errno));
        return;
    }
    for (const auto& s : *stats) {
        std::fprintf(f, "%d %llu %llu %llu %llu %llu\n", s.peer,
                     static_cast<unsigned long long>(s.sent_bytes),
                     static_cast<unsigned long long>(s.recv_bytes),
                     static_cast<unsigned long long>(s.sent_msgs),
                     static_cast<unsigned long long>(s.recv_msgs),
                     static_cast<unsigned long long>(s.forwarded));
    }
    std::fclose(f);
}

}  // namespace loom::comm
