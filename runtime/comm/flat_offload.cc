// SPDX-License-Identifier: Apache-2.0
// The node-local offload over the flat segment (flat_offload.hh).
#include "comm/flat_offload.hh"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/clock.hh"
#include "base/log.hh"
#include "comm/inc_offload.hh"

namespace loom::comm {
namespace {

// Calls in flight at once (LOOM_MAX_INFLIGHT is at most 4096, but the flat ones run one at
// a time; the rest wait here, and a full table is NO_RESOURCE: the engine posts again).
constexpr size_t entry_table = 64;

// How often a wait checks that the awaited rank is alive.
constexpr double liveness_period_s = 0.002;

// The signature in the 32 bits a call word has for it.
uint32_t sig32(uint64_t signature) {
    return uint32_t(signature ^ (signature >> 32));
}

bool seq_before(uint32_t a, uint32_t b) {
    return int32_t(a - b) < 0;
}

uint32_t flag_of(uint32_t seq) {
    uint32_t f = seq + 1;
    return f == 0 ? 1 : f;  // 0 is a fresh segment's; after 2^32 calls the flag skips it
}

std::string coll_name(schedule::collective c) {
    return std::string(schedule::collective_name(c));
}

bool is_copy(schedule::collective c) {
    return c == schedule::collective::allgather || c == schedule::collective::alltoall;
}

size_t words_for(size_t bytes) {
    return (bytes + 3) / 4;
}

}  // namespace

bool flat_carries(schedule::collective coll, loom_dtype_t dtype, loom_op_t op) {
    if (coll == schedule::collective::broadcast || is_copy(coll)) {
        return loom_dtype_size(dtype) != 0;
    }
    // LOOM_AVG arrives as a sum (the engine divides).
    return kernels::reduce_kernel(dtype, op == LOOM_AVG ? LOOM_SUM : op) != nullptr;
}

bool flat_fits(schedule::collective coll, int nranks, int64_t count, size_t dtype_size,
               size_t max_bytes) {
    const auto n = size_t(std::max(nranks, 1));
    switch (coll) {
        case schedule::collective::allgather:
            return size_t(schedule::block_size(count, int(n), 0)) * dtype_size <= max_bytes;
        case schedule::collective::alltoall:
            return n * words_for(size_t(count) * dtype_size) <= words_for(max_bytes);
        default:
            return size_t(count) * dtype_size <= max_bytes;
    }
}

int flat_halves(schedule::collective coll, int rank, int root, int nranks) {
    switch (coll) {
        case schedule::collective::allgather:
            return nranks > 1 ? nranks : 0;  // one push, N-1 pulls
        case schedule::collective::alltoall:
            return 2 * (nranks - 1);
        default:
            return inc_halves(coll, rank, root);
    }
}

void flat_offload::entry::reset() {
    used = has_push = has_pull = false;
    halves_needed = halves_posted = 0;
    push = pull = engine::offload_op{};
    for (part& p : sends) {
        p = part{};
    }
    for (part& p : recvs) {
        p = part{};
    }
}

flat_offload::flat_offload(flat_segment seg, int rank, size_t max_bytes)
    : seg_(std::move(seg)), rank_(rank), size_(seg_.size()), max_bytes_(max_bytes) {
    entries_.resize(entry_table);
    for (entry& e : entries_) {
        e.sends.resize(size_t(size_));
        e.recvs.resize(size_t(size_));
    }
    pidfds_.assign(size_t(size_), -1);
    queued_.resize(2 * size_t(size_) + 2);
}

flat_offload::~flat_offload() {
    for (int fd : pidfds_) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

void flat_offload::announce() {
    seg_.line(rank_)->pid.store(int32_t(::getpid()), std::memory_order_release);
}

loom_status_t flat_offload::post(const engine::offload_op& op) {
    entry* slot = nullptr;
    for (entry& e : entries_) {
        if (e.used && e.key().seq == op.seq) {
            slot = &e;
            break;
        }
        if (!e.used && slot == nullptr) {
            slot = &e;
        }
    }
    if (slot == nullptr) {
        return LOOM_ERR_NO_RESOURCE;
    }
    if (!slot->used) {
        slot->reset();
        slot->used = true;
    }
    slot->halves_needed = flat_halves(op.coll, rank_, op.root, size_);
    if (is_copy(op.coll)) {
        // The peer of the block: all-gather's slot is its writer; all-to-all's writer·N + reader.
        const bool a2a = op.coll == schedule::collective::alltoall;
        const int peer = a2a ? int(op.push ? op.slot % uint32_t(size_) : op.slot / uint32_t(size_))
                             : int(op.slot);
        if (peer < 0 || peer >= size_) {
            return LOOM_ERR_INTERNAL;
        }
        (op.push ? slot->sends : slot->recvs)[size_t(peer)] = {op.data, op.count, op.cookie, true};
    }
    if (!(op.push ? slot->has_push : slot->has_pull)) {
        (op.push ? slot->push : slot->pull) = op;
    }
    (op.push ? slot->has_push : slot->has_pull) = true;
    ++slot->halves_posted;
    return LOOM_SUCCESS;
}

flat_offload::entry* flat_offload::next_ready() {
    entry* best = nullptr;
    for (entry& e : entries_) {
        if (e.used && e.halves_posted >= e.halves_needed &&
            (best == nullptr || seq_before(e.key().seq, best->key().seq))) {
            best = &e;
        }
    }
    return best;
}

// False when the call ended at once (an error, or nothing to move).
bool flat_offload::start(entry& e) {
    const engine::offload_op& k = e.key();
    const size_t esize          = loom_dtype_size(k.dtype);
    run_                        = running{};
    run_.e                      = &e;
    run_.flag                   = flag_of(k.seq);
    run_.parity                 = k.seq & 1u;
    run_.bytes                  = size_t(k.count) * esize;
    run_.at                     = e.has_push ? phase::write : phase::verify;
    run_.copies                 = is_copy(k.coll);
    failed_peer_                = -1;
    bool fits                   = run_.bytes <= max_bytes_;
    if (run_.copies) {
        // Every block of the call, sent or received, is `count` elements (all-to-all) or a
        // block of the gathered vector (all-gather); the slot must hold what a writer packs.
        size_t largest = 0, moved = 0;
        for (const std::vector<part>* v : {&e.sends, &e.recvs}) {
            for (const part& p : *v) {
                largest = std::max(largest, size_t(p.count) * esize);
                moved += p.posted ? size_t(p.count) : 0;
            }
        }
        largest           = std::max(largest, run_.bytes);
        run_.stride_words = words_for(largest);
        fits              = k.coll == schedule::collective::alltoall
                                ? size_t(size_) * run_.stride_words <= words_for(max_bytes_)
                                : largest <= max_bytes_;
        run_.bytes        = moved * esize;  // 0: nothing to move
    } else if (k.coll != schedule::collective::broadcast) {
        run_.kernel = kernels::reduce_kernel(k.dtype, k.op);
    }
    if (!fits || (!run_.copies && k.coll != schedule::collective::broadcast && !run_.kernel)) {
        failure_ = "rank " + std::to_string(rank_) + ": flat " + coll_name(k.coll) + " call " +
                   std::to_string(k.seq) + ": " + std::to_string(run_.bytes) +
                   " bytes or its dtype/op do not fit the flat segment (LOOM_FLAT_MAX_BYTES " +
                   std::to_string(max_bytes_) + ")";
        finish(LOOM_ERR_NOT_APPLICABLE);
        return false;
    }
    if (run_.bytes == 0) {
        finish(LOOM_SUCCESS);
        return false;
    }
    // R: before this rank's slot words, so a rank that sees them can see the call too.
    seg_.line(rank_)->call.store(uint64_t(run_.flag) << 32 | sig32(k.signature),
                                 std::memory_order_release);
    if (!e.has_push) {
        wake_sleepers();  // a rank may wait for this one's arrival (verify); a writer wakes
    }                     // it once its slot is written (one wake, not two)
    return true;
}

bool flat_offload::verify(int* waiting_for, int* mismatch) {
    const uint32_t mine = sig32(run_.e->key().signature);
    for (; run_.verified < size_; ++run_.verified) {
        const int r = run_.verified;
        uint64_t w  = seg_.line(r)->call.load(std::memory_order_acquire);
        auto flag   = uint32_t(w >> 32);
        if (flag == run_.flag) {
            if (uint32_t(w) != mine) {
                *mismatch = r;
                return false;
            }
        } else if (int32_t(flag - run_.flag) < 0) {
            *waiting_for = r;  // not in this call yet
            return false;
        }  // else past it: it found this call the same everywhere before leaving it
    }
    return true;
}

bool flat_offload::write_ready(int* behind) {
    const uint32_t last = last_flag_[run_.parity];
    if (last == 0) {
        return true;
    }
    for (int r = 0; r < size_; ++r) {
        uint32_t done = seg_.line(r)->done.load(std::memory_order_acquire);  // A: pairs with R
        if (int32_t(done - last) < 0) {
            *behind = r;
            return false;
        }
    }
    return true;
}

void flat_offload::write_slot() {
    const entry& e = *run_.e;
    if (e.push.coll == schedule::collective::alltoall) {
        // Packed: every outgoing block in one pass, block j at word j·stride.
        for (int j = 0; j < size_; ++j) {
            const part& p = e.sends[size_t(j)];
            if (p.posted) {
                write_words(p.data, size_t(p.count) * loom_dtype_size(e.push.dtype),
                            size_t(j) * run_.stride_words);
            }
        }
    } else {
        write_words(e.push.data, size_t(e.push.count) * loom_dtype_size(e.push.dtype), 0);
    }
    last_flag_[run_.parity] = run_.flag;
}

void flat_offload::write_words(const void* from, size_t bytes, size_t first_word) {
    const auto* src          = static_cast<const std::byte*>(from);
    std::atomic<uint64_t>* w = seg_.slot(rank_, run_.parity) + first_word;
    const uint64_t high      = uint64_t(run_.flag) << 32;
    const size_t full        = bytes / 4;
    for (size_t i = 0; i < full; ++i) {
        uint32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        w[i].store(high | v, std::memory_order_relaxed);  // data and flag in one store
    }
    if (size_t tail = bytes % 4; tail != 0) {
        uint32_t v = 0;
        std::memcpy(&v, src + 4 * full, tail);
        w[full].store(high | v, std::memory_order_relaxed);
    }
}

// Reads as far as the flags allow; true when the output is complete.
bool flat_offload::read_some(int* waiting_for) {
    const engine::offload_op& k = run_.e->pull;
    const bool bcast            = k.coll == schedule::collective::broadcast;
    const int readers           = bcast ? 1 : size_;
    const size_t esize          = loom_dtype_size(k.dtype);
    auto* dst_base              = static_cast<std::byte*>(k.data);
    const uint32_t flag         = run_.flag;
    for (; run_.chunk * chunk_bytes < run_.bytes; ++run_.chunk, run_.reader = 0) {
        const size_t at    = run_.chunk * chunk_bytes;
        const size_t bytes = std::min(chunk_bytes, run_.bytes - at);
        const size_t words = (bytes + 3) / 4;
        for (; run_.reader < readers; ++run_.reader) {
            const int peer = bcast ? k.root : run_.reader;
            const std::atomic<uint64_t>* w =
                seg_.slot(peer, run_.parity) + run_.chunk * (chunk_bytes / 4);
            for (size_t i = 0; i < words; ++i) {
                uint64_t v = w[i].load(std::memory_order_relaxed);
                if (uint32_t(v >> 32) != flag) {
                    *waiting_for = peer;
                    return false;  // this chunk again next time, from its first word
                }
                auto data = uint32_t(v);
                std::memcpy(staging_ + 4 * i, &data, 4);
            }
            if (run_.reader == 0) {
                std::memcpy(dst_base + at, staging_, bytes);
            } else {
                run_.kernel(dst_base + at, dst_base + at, staging_, bytes / esize);
            }
            run_.stall_since_s = 0;
        }
    }
    return true;
}

// Copy collectives: each writer's block straight from its LL words into the output, writer
// by writer, a chunk at a time; true when every block is in. A chunk whose words are not all
// current is copied again from its first word next time (the same bytes: harmless).
bool flat_offload::read_copies(int* waiting_for) {
    const entry& e       = *run_.e;
    const size_t esize   = loom_dtype_size(e.pull.dtype);
    const bool a2a       = e.pull.coll == schedule::collective::alltoall;
    const uint32_t flag  = run_.flag;
    const size_t chunk_w = chunk_bytes / 4;
    for (; run_.reader < size_; ++run_.reader, run_.chunk = 0) {
        const int peer = run_.reader;
        const part& p  = e.recvs[size_t(peer)];
        if (peer == rank_ || !p.posted) {
            continue;
        }
        const size_t bytes = size_t(p.count) * esize;
        const std::atomic<uint64_t>* src =
            seg_.slot(peer, run_.parity) + (a2a ? size_t(rank_) * run_.stride_words : 0);
        auto* dst = static_cast<std::byte*>(p.data);
        for (; run_.chunk * chunk_bytes < bytes; ++run_.chunk) {
            const size_t at                = run_.chunk * chunk_bytes;
            const size_t n                 = std::min(chunk_bytes, bytes - at);
            const size_t words             = words_for(n);
            const std::atomic<uint64_t>* w = src + run_.chunk * chunk_w;
            for (size_t i = 0; i < words; ++i) {
                uint64_t v = w[i].load(std::memory_order_relaxed);
                if (uint32_t(v >> 32) != flag) {
                    *waiting_for = peer;
                    return false;
                }
                auto data = uint32_t(v);
                std::memcpy(dst + at + 4 * i, &data, std::min<size_t>(4, n - 4 * i));
            }
            run_.stall_since_s = 0;
        }
    }
    return true;
}

// The doorbell (flat_offload.hh): the waker protocol of drivers/waker.hh over a futex in
// shared memory (not FUTEX_PRIVATE: the waker is another process).
uint64_t flat_offload::arm_sleep() {
    flat_rank_line* me = seg_.line(rank_);
    me->sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // F1: before the last poll pass
    return me->bell.load(std::memory_order_seq_cst);
}

void flat_offload::sleep(uint64_t token, int64_t timeout_ns) {
    flat_rank_line* me = seg_.line(rank_);
    if (timeout_ns > 0 && me->bell.load(std::memory_order_acquire) == uint32_t(token)) {
        timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
        ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&me->bell), FUTEX_WAIT, uint32_t(token),
                  &ts, nullptr, 0);
    }
    me->sleeping.store(0, std::memory_order_relaxed);
}

void flat_offload::wake_sleepers() {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // F2: pairs with F1
    for (int r = 0; r < size_; ++r) {
        flat_rank_line* l = seg_.line(r);
        if (r != rank_ && l->sleeping.load(std::memory_order_acquire) != 0 &&
            l->waiting_on.load(std::memory_order_relaxed) == rank_) {
            l->bell.fetch_add(1, std::memory_order_release);
            ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&l->bell), FUTEX_WAKE, 1, nullptr,
                      nullptr, 0);
        }
    }
}

bool flat_offload::waiting_on(int peer) {
    std::atomic<int32_t>& w = seg_.line(rank_)->waiting_on;
    if (w.load(std::memory_order_relaxed) == peer) {
        return false;
    }
    w.store(peer, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // F3: pairs with F2
    return true;
}

bool flat_offload::peer_dead(int peer) {
    if (peer == rank_) {
        return false;
    }
    int32_t pid = seg_.line(peer)->pid.load(std::memory_order_acquire);
    if (pid <= 0) {
        return false;  // not attached yet: only the deadline can tell
    }
    int& fd = pidfds_[size_t(peer)];
    if (fd < 0) {
        fd = int(::syscall(SYS_pidfd_open, pid_t(pid), 0));
        if (fd < 0) {
            return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;  // no pidfds: a zombie looks alive
        }
    }
    pollfd p{fd, POLLIN, 0};  // readable once the process has exited (zombies included)
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

// A wait on `peer` made no progress this pass: true when it ended the call (dead, deadline).
bool flat_offload::stalled(int peer, const char* what) {
    const double now = now_s();
    awaited_         = peer;
    if (run_.stall_since_s == 0) {
        run_.stall_since_s = now;
        run_.next_check_s  = now + liveness_period_s;
        return false;
    }
    if (now < run_.next_check_s) {
        return false;
    }
    run_.next_check_s           = now + liveness_period_s;
    const engine::offload_op& k = run_.e->key();
    const std::string call      = "rank " + std::to_string(rank_) + ": flat " + coll_name(k.coll) +
                             " call " + std::to_string(k.seq) + ": ";
    if (peer_dead(peer)) {
        failure_ = call + "rank " + std::to_string(peer) + " is gone (its process exited) while " +
                   "this rank waited for its " + what;
        LOOM_LOG_WARN(log::subsystem::coll, "%s", failure_.c_str());
        failed_peer_ = peer;
        finish(LOOM_ERR_PEER_FAILURE);
        return true;
    }
    if (k.deadline_s > 0 && now > k.deadline_s) {
        failure_ = call + "timed out after " + std::to_string(now - run_.stall_since_s) +
                   " s waiting for rank " + std::to_string(peer) + "'s " + what;
        failed_peer_ = peer;
        finish(LOOM_ERR_TIMEOUT);
        return true;
    }
    return false;
}

void flat_offload::emit(uint64_t cookie, loom_status_t code) {
    if (queued_head_ + queued_n_ < queued_.size()) {  // sized for one call: never full
        queued_[queued_head_ + queued_n_++] = {cookie, code};
    }
}

int flat_offload::drain(engine::offload_completion* out, int max) {
    int n = 0;
    for (; queued_n_ > 0 && n < max; --queued_n_) {
        out[n++] = queued_[queued_head_++];
    }
    if (queued_n_ == 0) {
        queued_head_ = 0;
    }
    return n;
}

void flat_offload::complete_pushes(loom_status_t code) {
    entry& e = *run_.e;
    if (!e.has_push || run_.push_done) {
        return;
    }
    if (run_.copies) {
        for (const part& p : e.sends) {
            if (p.posted) {
                emit(p.cookie, code);
            }
        }
    } else {
        emit(e.push.cookie, code);
    }
    run_.push_done = true;
}

void flat_offload::finish(loom_status_t code) {
    entry& e = *run_.e;
    if (code == LOOM_SUCCESS) {
        // R: this rank's reads of call `flag` are done before anyone overwrites a slot.
        seg_.line(rank_)->done.store(run_.flag, std::memory_order_release);
        wake_sleepers();  // a writer may wait for this `done`
    }
    complete_pushes(code);
    if (e.has_pull && run_.copies) {
        for (const part& p : e.recvs) {
            if (p.posted) {
                emit(p.cookie, code);
            }
        }
    } else if (e.has_pull) {
        emit(e.pull.cookie, code);
    }
    e.reset();
    run_     = running{};
    awaited_ = -1;
}

int flat_offload::poll(engine::offload_completion* out, int max) {
    int n = drain(out, max);
    if (queued_n_ > 0) {
        return n;  // the rest of the last call's completions first
    }
    step();
    return n + drain(out + n, max - n);
}

void flat_offload::step() {
    if (run_.e == nullptr) {
        entry* e = next_ready();
        if (e == nullptr || !start(*e)) {
            return;
        }
    }
    if (run_.at == phase::write) {
        int behind = -1;
        if (!write_ready(&behind) && (!waiting_on(behind) || !write_ready(&behind))) {
            stalled(behind, "done word (a reader of this buffer's previous call)");
            return;
        }
        write_slot();
        wake_sleepers();
        run_.stall_since_s = 0;
        if (run_.e->has_pull) {  // else it completes with the call (a reduce's non-root)
            complete_pushes(LOOM_SUCCESS);
        }
        run_.at = phase::verify;
    }
    if (run_.at == phase::verify || (run_.at == phase::read && run_.verified < size_)) {
        int waiting_for = -1, mismatch = -1;
        if (!verify(&waiting_for, &mismatch) && mismatch < 0 &&
            (!waiting_on(waiting_for) || !verify(&waiting_for, &mismatch)) && mismatch < 0) {
            stalled(waiting_for, "arrival in this call");
            return;
        }
        if (mismatch >= 0) {
            const engine::offload_op& k = run_.e->key();
            failure_ = "rank " + std::to_string(rank_) + ": flat " + coll_name(k.coll) + " call " +
                       std::to_string(k.seq) + ": rank " + std::to_string(mismatch) +
                       " started another call (different primitive, count, dtype, op, root or "
                       "algorithm)";
            failed_peer_ = mismatch;
            finish(LOOM_ERR_MISMATCH);
            return;
        }
        if (!run_.e->has_pull) {
            finish(LOOM_SUCCESS);  // completes the push (a reduce's non-root)
            return;
        }
        run_.at = phase::read;
    }
    int waiting_for = -1;
    auto read = [&] { return run_.copies ? read_copies(&waiting_for) : read_some(&waiting_for); };
    if (!read() && (!waiting_on(waiting_for) || !read())) {
        stalled(waiting_for, run_.copies ? "block" : "contribution");
        return;
    }
    finish(LOOM_SUCCESS);
}

bool flat_offload::pending() const {
    return queued_n_ > 0 ||
           std::any_of(entries_.begin(), entries_.end(), [](const entry& e) { return e.used; });
}

bool flat_offload::cancel(uint64_t cookie) {
    auto in = [cookie](const std::vector<part>& v) {
        return std::any_of(v.begin(), v.end(),
                           [cookie](const part& p) { return p.posted && p.cookie == cookie; });
    };
    for (entry& e : entries_) {
        if (!e.used || !((e.has_push && e.push.cookie == cookie) ||
                         (e.has_pull && e.pull.cookie == cookie) || in(e.sends) || in(e.recvs))) {
            continue;
        }
        if (run_.e == &e) {
            run_ = running{};
        }
        // Nothing else to undo: `done` stays at the last call this rank finished, which only
        // makes writers wait for a later one, and every flag is the call's own.
        e.reset();
        return true;
    }
    return false;
}

}  // namespace loom::comm
