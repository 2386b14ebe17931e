// The forwarding wrapper (forward.hh).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/check.hh"
#include "drivers/forward/fifo.hh"
#include "drivers/forward/forward.hh"
#include "drivers/forward/forward_params.hh"
#include "drivers/registry_internal.hh"
#include "routing/dor.hh"
#include "routing/route_table.hh"
#include "routing/routing_params.hh"
#include "topology/topology.hh"

namespace loom::drivers {
namespace forward {
namespace {

constexpr uint32_t flag_control   = 1;
constexpr uint32_t flag_withdrawn = 2;  // the payload was revoked on the way: void
constexpr uint32_t flag_vc1       = 4;  // the hop this header travels is on VC1 (dateline.hh)

struct header {
    int32_t src;
    int32_t dst;
    uint64_t tag;
    uint64_t imm;
    uint64_t total;
    uint64_t offset;
    uint32_t len;
    uint32_t flags;
};
static_assert(sizeof(header) == 48);

// Inner cookies: kind in the top byte, index below.
enum kind : uint64_t { k_hdr_rx = 1, k_pay_rx = 2, k_tx_hdr = 3, k_tx_pay = 4, k_self = 5 };
constexpr uint64_t cookie_of(kind k, uint64_t i) {
    return (uint64_t(k) << 56) | i;
}
constexpr uint64_t tag_hdr(uint32_t seq) {
    return uint64_t(seq & 0x7fffffffu) * 2;
}

enum class op_kind : uint8_t { send, recv, self };

struct user_op {
    op_kind kind;
    bool live      = false;
    bool cancelled = false;
    bool done      = false;  // completion queued
    uint64_t cookie;
    int peer;
    uint64_t tag, imm;
    const uint8_t* src = nullptr;  // sends
    uint8_t* dst       = nullptr;  // receives
    size_t len;
    size_t issued        = 0;  // sends: bytes cut into chunks so far
    bool first_issued    = false;
    uint32_t chunks_out  = 0;  // sends: chunks not yet handed to the first hop
    loom_status_t status = LOOM_SUCCESS;
    int msg              = -1;     // receives: the matched incoming message
    bool listed          = false;  // receives: in open_recvs_ (posted, not yet matched)
    std::unique_ptr<uint8_t[]> copy;
};

// An incoming message at its destination.
struct in_msg {
    bool live = false;
    int src;
    uint64_t tag, imm, total;
    int rop              = -1;  // matched receive
    bool drain           = false;
    bool withdrawn       = false;
    loom_status_t status = LOOM_SUCCESS;
    uint64_t done_bytes  = 0;
    int parked_head      = -1;  // chunks waiting for their receive: a list through chunk::next
    int parked_tail      = -1;
};

// waiting: a forwarded chunk whose header was taken but whose buffer class was busy; its
// payload stays with the inner driver until a buffer of the class frees (pump()).
enum class ch_state : uint8_t { free, pay_rx, parked, tx, waiting };

struct chunk {
    ch_state state = ch_state::free;
    header h;
    int in_link         = -1;  // -1 at the source
    uint32_t in_seq     = 0;
    int out_link        = -1;
    uint32_t out_seq    = 0;
    int buf             = -1;  // forwarding buffer
    int cls             = -1;  // its buffer class (output port, VC) when forwarded
    int next            = -1;  // the next chunk of a parked list
    int sop             = -1;  // source's send op
    int msg             = -1;  // destination message
    uint8_t* rx_into    = nullptr;
    const uint8_t* data = nullptr;
    uint32_t tx_pending = 0;
    bool hdr_posted = false, pay_posted = false, rx_posted = false;
    /// A sink receive left behind by a cancelled receive (see cancel()): not pending.
    bool orphan = false;
    /// Destination chunk that arrived before its receive: its payload is read into this
    /// private buffer (so the upstream router's buffer is freed) and copied out on match.
    /// An index into early_store_; -1 when none.
    int early = -1;
};

struct link_state {
    int peer;
    int dim         = -1;  // the dimension this link runs along
    uint32_t tx_seq = 0;
    uint32_t rx_seq = 0;  // the next header seq to post a receive for
    std::vector<header> hdr;
    std::vector<uint32_t> hdr_seq;
    link_stat stat;
};

class forward_endpoint final : public endpoint {
  public:
    forward_endpoint(std::unique_ptr<endpoint> inner, const forward_config& c,
                     const topology::shape& s, routing::tie_rule ties, int rank);
    caps capabilities() const override;
    status connect() override;
    const fast_path& fast() const override { return fast_; }
    void close() override { inner_->close(); }

    std::vector<link_stat> stats() const;

    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie);
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie);
    int poll(completion* out, int max);
    bool pending() const;
    bool cancel(uint64_t cookie);

  private:
    int take_op();
    int take_chunk();
    void free_chunk(uint32_t c);
    void release_op(int i);
    void finish(int i, const completion& c);
    void handle(const completion& c);
    void on_header(int link, uint32_t slot, loom_status_t st);
    void post_header_rx(int link, uint32_t slot);
    void deliver(uint32_t c);
    void start_rx(uint32_t c, uint8_t* into);
    void start_tx(uint32_t c);
    bool try_tx(uint32_t c);
    bool try_rx(uint32_t c);
    void tx_done(uint32_t c, loom_status_t st);
    void rx_done(uint32_t c, loom_status_t st, bool withdrawn);
    void msg_progress(int m);
    int find_msg(int src, uint64_t tag) const;
    void match(int m, int r);
    void pump();
    void drain_parked(int m);
    void read_early(int m);
    int out_vc_of(const header& h, int in_link) const;
    int class_of(const header& h, int in_link) const;
    void park(int m, uint32_t c);
    int take_early();
    uint8_t* early_data(const chunk& k) { return early_store_[size_t(k.early)].get(); }
    void unlist_recv(int i);
    void unlist_msg(int m);

    std::vector<std::unique_ptr<uint8_t[]>> bufs_;
    std::unique_ptr<uint8_t[]> sink_;
    std::unique_ptr<endpoint> inner_;
    forward_config cfg_;
    topology::shape shape_;
    routing::route_table table_;
    int rank_;
    std::string name_;
    fast_path fast_{};
    std::vector<link_state> links_;
    std::vector<int> link_of_;  // rank -> link index, -1 when not a neighbour
    std::vector<user_op> ops_;
    std::vector<int> free_ops_;
    std::vector<chunk> chunks_;
    std::vector<uint32_t> free_chunks_;
    /// Free forwarding buffers per class, a class per output channel (port, VC): a chunk
    /// a router sends on takes a buffer of the channel it leaves on, so a buffer waits only
    /// on the next channel of its route. The dateline VCs make those waits acyclic
    /// (routing/channel_graph.hh proves it per shape), so no cycle of routers can hold
    /// every buffer. A chunk whose class is busy waits in its class queue (waiting_) without
    /// blocking the link's other classes.
    std::vector<std::vector<int>> free_bufs_;
    std::vector<fifo<uint32_t>> waiting_;
    uint32_t per_class_ = 1;
    int vcs_            = 1;
    std::vector<in_msg> msgs_;
    std::vector<int> free_msgs_;
    std::vector<int> live_msgs_;   // messages in progress at this destination
    std::vector<int> open_recvs_;  // posted receives not yet matched, in posting order
    /// Early-arrival buffers (chunk-sized), recycled: made on first need, never freed.
    std::vector<std::unique_ptr<uint8_t[]>> early_store_;
    std::vector<int> free_early_;
    std::vector<int> sends_;  // send ops still cutting chunks, in posting order
    fifo<uint32_t> retry_;    // chunks whose inner post was refused (NO_RESOURCE)
    fifo<uint32_t> stalled_;  // header slots (link * headers + slot) awaiting a chunk
    fifo<completion> done_;   // user completions ready
    int live_chunks_         = 0;
    uint32_t waiting_chunks_ = 0;  // chunks in waiting_
    int live_ops_            = 0;
    uint32_t own_chunks_     = 0;  // chunks of this rank's sends: at most half of them all
};

forward_endpoint::forward_endpoint(std::unique_ptr<endpoint> inner, const forward_config& c,
                                   const topology::shape& s, routing::tie_rule ties, int rank)
    : inner_(std::move(inner)),
      cfg_(c),
      shape_(s),
      table_(routing::route_table::build(s, rank, ties, routing::vc_policy::dateline)),
      rank_(rank),
      retry_(c.max_ops),
      stalled_(size_t(c.headers) * 8),
      done_(c.max_ops) {
    name_ = std::string("fwd:") + inner_->capabilities().name;
    fast_ = fast_path_of(this);
    link_of_.assign(size_t(s.size()), -1);
    for (int p : s.neighbours(rank)) {
        link_of_[size_t(p)] = int(links_.size());
        link_state l;
        l.peer = p;
        l.dim  = table_.to(p).dim;
        l.hdr.resize(c.headers);
        l.hdr_seq.resize(c.headers);
        l.stat.peer = p;
        links_.push_back(std::move(l));
    }
    ops_.resize(c.max_ops);
    chunks_.resize(c.max_ops);
    msgs_.resize(c.max_ops);
    for (uint32_t i = c.max_ops; i-- > 0;) {
        free_ops_.push_back(int(i));
        free_chunks_.push_back(i);
        free_msgs_.push_back(int(i));
    }
    int ports = 1;
    for (const routing::route_entry& e : table_.entries()) {
        ports = std::max(ports, int(e.port) + 1);
    }
    vcs_           = routing::vc_count(s, routing::vc_policy::dateline);
    size_t classes = size_t(ports * vcs_);
    per_class_     = std::max<uint32_t>(2, c.buffers / uint32_t(classes));
    free_bufs_.resize(classes);
    waiting_.resize(classes, fifo<uint32_t>(64));
    for (uint32_t i = 0; i < per_class_ * classes; ++i) {
        bufs_.push_back(std::make_unique_for_overwrite<uint8_t[]>(c.chunk));
    }
    for (size_t k = 0; k < classes; ++k) {
        for (uint32_t i = per_class_; i-- > 0;) {
            free_bufs_[k].push_back(int(k * per_class_ + i));
        }
    }
    sink_ = std::make_unique_for_overwrite<uint8_t[]>(c.chunk);
    sends_.reserve(c.max_ops);
    live_msgs_.reserve(c.max_ops);
    open_recvs_.reserve(c.max_ops);
    early_store_.reserve(c.max_ops);
    free_early_.reserve(c.max_ops);
}

caps forward_endpoint::capabilities() const {
    caps c        = inner_->capabilities();
    c.name        = name_.c_str();
    c.single_copy = false;  // a routed payload is copied at every router
    return c;
}

status forward_endpoint::connect() {
    LOOM_CHECK(inner_->connect());
    for (size_t l = 0; l < links_.size(); ++l) {
        for (uint32_t s = 0; s < cfg_.headers; ++s) {
            links_[l].hdr_seq[s] = links_[l].rx_seq++;
            post_header_rx(int(l), s);
        }
    }
    return status::ok();
}

void forward_endpoint::post_header_rx(int link, uint32_t slot) {
    link_state& l      = links_[size_t(link)];
    const fast_path& f = inner_->fast();
    // Header receives are few and fixed: the inner queue has room for them (a refusal here
    // would lose the link, so it is retried until accepted).
    while (f.post_recv(f.ctx, l.peer, tag_hdr(l.hdr_seq[slot]), 0, &l.hdr[slot], sizeof(header),
                       cookie_of(k_hdr_rx, uint64_t(link) * cfg_.headers + slot)) ==
           LOOM_ERR_NO_RESOURCE) {
        completion c[16];
        int n = f.poll(f.ctx, c, 16);
        for (int i = 0; i < n; ++i) {
            handle(c[i]);
        }
    }
}

int forward_endpoint::take_op() {
    if (free_ops_.empty()) {
        return -1;
    }
    int i = free_ops_.back();
    free_ops_.pop_back();
    ops_[size_t(i)]      = user_op{};
    ops_[size_t(i)].live = true;
    ++live_ops_;
    return i;
}

void forward_endpoint::release_op(int i) {
    user_op& o = ops_[size_t(i)];
    unlist_recv(i);
    o.live = false;
    o.copy.reset();
    free_ops_.push_back(i);
    --live_ops_;
}

// Keeps open_recvs_ in posting order (matching takes the first that fits), without
// allocating: erase shifts within the reserved array.
void forward_endpoint::unlist_recv(int i) {
    if (!ops_[size_t(i)].listed) {
        return;
    }
    ops_[size_t(i)].listed = false;
    open_recvs_.erase(std::find(open_recvs_.begin(), open_recvs_.end(), i));
}

void forward_endpoint::unlist_msg(int mi) {
    auto at = std::find(live_msgs_.begin(), live_msgs_.end(), mi);
    *at     = live_msgs_.back();
    live_msgs_.pop_back();
}

int forward_endpoint::take_early() {
    if (free_early_.empty()) {
        early_store_.push_back(std::make_unique_for_overwrite<uint8_t[]>(cfg_.chunk));
        return int(early_store_.size()) - 1;
    }
    int e = free_early_.back();
    free_early_.pop_back();
    return e;
}

void forward_endpoint::park(int mi, uint32_t c) {
    in_msg& m       = msgs_[size_t(mi)];
    chunks_[c].next = -1;
    if (m.parked_tail >= 0) {
        chunks_[size_t(m.parked_tail)].next = int(c);
    } else {
        m.parked_head = int(c);
    }
    m.parked_tail = int(c);
}

// The VC chunk `h` leaves on (routing/route_table.hh): its route entry's rule applied to
// the link it came in on (-1 at the source) and the VC it travelled there.
int forward_endpoint::out_vc_of(const header& h, int in_link) const {
    const routing::route_entry& e = table_.to(h.dst);
    int arrival_dim               = in_link >= 0 ? links_[size_t(in_link)].dim : -1;
    return routing::out_vc(e.vc, arrival_dim, (h.flags & flag_vc1) != 0 ? 1 : 0, e.dim);
}

int forward_endpoint::class_of(const header& h, int in_link) const {
    return table_.to(h.dst).port * vcs_ + out_vc_of(h, in_link);
}

int forward_endpoint::take_chunk() {
    if (free_chunks_.empty()) {
        return -1;
    }
    uint32_t c = free_chunks_.back();
    free_chunks_.pop_back();
    chunks_[c] = chunk{};
    ++live_chunks_;
    return int(c);
}

void forward_endpoint::free_chunk(uint32_t c) {
    chunk& k = chunks_[c];
    if (k.buf >= 0) {
        free_bufs_[size_t(k.buf) / per_class_].push_back(k.buf);
        k.buf = -1;
    }
    if (k.early >= 0) {
        free_early_.push_back(k.early);
        k.early = -1;
    }
    k.state = ch_state::free;
    free_chunks_.push_back(c);
    live_chunks_ -= k.orphan ? 0 : 1;
}

// Queues the completion of op i (unless cancelled) and frees it.
void forward_endpoint::finish(int i, const completion& c) {
    user_op& o = ops_[size_t(i)];
    if (!o.cancelled) {
        completion d = c;
        d.cookie     = o.cookie;
        done_.push_back(d);
    }
    release_op(i);
}

loom_status_t forward_endpoint::post_send(int peer, uint64_t tag, uint64_t imm, const void* buf,
                                          size_t len, uint64_t cookie) {
    if (peer < 0 || peer >= shape_.size()) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    bool control = (tag & control_tag_bit) != 0;
    if (peer == rank_) {
        if (control) {
            const fast_path& f = inner_->fast();
            return f.post_send(f.ctx, peer, tag, imm, buf, len, cookie);
        }
        int i = take_op();
        if (i < 0) {
            return LOOM_ERR_NO_RESOURCE;
        }
        ops_[size_t(i)].kind   = op_kind::self;
        ops_[size_t(i)].cookie = cookie;
        const fast_path& f     = inner_->fast();
        loom_status_t st       = f.post_send(f.ctx, peer, tag, imm, buf, len, cookie_of(k_self, i));
        if (st != LOOM_SUCCESS) {
            release_op(i);
        }
        return st;
    }
    if (!control && buf == nullptr && len > 0) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    if (control) {
        int c = take_chunk();
        if (c < 0) {
            return LOOM_ERR_NO_RESOURCE;
        }
        chunk& k = chunks_[size_t(c)];
        k.h      = header{rank_, peer, tag, imm, 0, 0, 0, flag_control};
        start_tx(uint32_t(c));
        return LOOM_SUCCESS;
    }
    int i = take_op();
    if (i < 0) {
        return LOOM_ERR_NO_RESOURCE;
    }
    user_op& o = ops_[size_t(i)];
    o.kind     = op_kind::send;
    o.cookie   = cookie;
    o.peer     = peer;
    o.tag      = tag;
    o.imm      = imm;
    o.src      = static_cast<const uint8_t*>(buf);
    o.len      = len;
    sends_.push_back(i);
    pump();
    return LOOM_SUCCESS;
}

// Gives freed buffers to the chunks waiting for their class, takes up stalled headers, then
// cuts chunks of the pending sends while chunks, windows and the sends' half of the chunks
// allow (arrivals first: they free chunks downstream).
void forward_endpoint::pump() {
    for (size_t cls = 0; cls < waiting_.size(); ++cls) {
        while (!waiting_[cls].empty() && !free_bufs_[cls].empty()) {
            uint32_t c = waiting_[cls].front();
            waiting_[cls].pop_front();
            --waiting_chunks_;
            chunks_[c].buf = free_bufs_[cls].back();
            free_bufs_[cls].pop_back();
            start_rx(c, bufs_[size_t(chunks_[c].buf)].get());
        }
    }
    for (size_t n = stalled_.size(); n > 0 && !free_chunks_.empty(); --n) {
        uint32_t at = stalled_.front();
        stalled_.pop_front();
        on_header(int(at / cfg_.headers), at % cfg_.headers, LOOM_SUCCESS);  // or stalls again
    }
    size_t keep = 0;
    for (size_t s = 0; s < sends_.size(); ++s) {
        int i      = sends_[s];
        user_op& o = ops_[size_t(i)];
        while ((o.issued < o.len || !o.first_issued) && o.chunks_out < cfg_.window &&
               own_chunks_ < cfg_.max_ops / 2) {
            int c = take_chunk();
            if (c < 0) {
                break;
            }
            size_t n = std::min(cfg_.chunk, o.len - o.issued);
            chunk& k = chunks_[size_t(c)];
            k.h      = header{rank_, o.peer, o.tag, o.imm, o.len, o.issued, uint32_t(n), 0};
            k.sop    = i;
            k.data   = o.src + o.issued;
            o.issued += n;
            o.first_issued = true;
            ++o.chunks_out;
            ++own_chunks_;
            start_tx(uint32_t(c));
        }
        if (o.issued < o.len || !o.first_issued) {
            sends_[keep++] = i;
        }
    }
    sends_.resize(keep);
}

void forward_endpoint::start_tx(uint32_t c) {
    chunk& k     = chunks_[c];
    k.h.flags    = (k.h.flags & ~flag_vc1) | (out_vc_of(k.h, k.in_link) == 1 ? flag_vc1 : 0);
    k.state      = ch_state::tx;
    k.out_link   = link_of_[size_t(table_.to(k.h.dst).next)];
    k.out_seq    = links_[size_t(k.out_link)].tx_seq++;
    k.tx_pending = k.h.len > 0 ? 2 : 1;
    k.hdr_posted = false;
    k.pay_posted = k.h.len == 0;
    if (!try_tx(c)) {
        retry_.push_back(c);
    }
}

// Posts what is not yet posted of chunk c's header and payload; false on NO_RESOURCE.
bool forward_endpoint::try_tx(uint32_t c) {
    chunk& k           = chunks_[c];
    link_state& l      = links_[size_t(k.out_link)];
    const fast_path& f = inner_->fast();
    if (!k.hdr_posted) {
        loom_status_t st = f.post_send(f.ctx, l.peer, tag_hdr(k.out_seq), 0, &k.h, sizeof(header),
                                       cookie_of(k_tx_hdr, c));
        if (st == LOOM_ERR_NO_RESOURCE) {
            return false;
        }
        k.hdr_posted = true;
        ++l.stat.sent_msgs;
        l.stat.sent_bytes += k.h.len;
        if (k.in_link >= 0) {
            ++links_[size_t(k.in_link)].stat.forwarded;
        }
        if (st != LOOM_SUCCESS) {
            k.pay_posted = true;  // refused: the payload does not follow its header
            k.tx_pending = 1;
            tx_done(c, st);
            return true;
        }
    }
    if (!k.pay_posted) {
        loom_status_t st = f.post_send(f.ctx, l.peer, tag_hdr(k.out_seq) + 1, 0, k.data, k.h.len,
                                       cookie_of(k_tx_pay, c));
        if (st == LOOM_ERR_NO_RESOURCE) {
            return false;
        }
        k.pay_posted = true;
        if (st != LOOM_SUCCESS) {
            tx_done(c, st);
        }
    }
    return true;
}

void forward_endpoint::tx_done(uint32_t c, loom_status_t st) {
    chunk& k = chunks_[c];
    if (k.sop >= 0 && st != LOOM_SUCCESS && ops_[size_t(k.sop)].status == LOOM_SUCCESS) {
        ops_[size_t(k.sop)].status = st;
    }
    if (--k.tx_pending > 0) {
        return;
    }
    if (k.sop >= 0) {
        user_op& o = ops_[size_t(k.sop)];
        --o.chunks_out;
        --own_chunks_;
        if (o.chunks_out == 0 && o.issued == o.len && o.first_issued) {
            finish(k.sop, completion{0, o.status, o.peer, o.len, o.tag, o.imm});
        }
    }
    free_chunk(c);
}

void forward_endpoint::start_rx(uint32_t c, uint8_t* into) {
    chunk& k    = chunks_[c];
    k.state     = ch_state::pay_rx;
    k.rx_into   = into;
    k.rx_posted = false;
    if (!try_rx(c)) {
        retry_.push_back(c);
    }
}

bool forward_endpoint::try_rx(uint32_t c) {
    chunk& k           = chunks_[c];
    const fast_path& f = inner_->fast();
    loom_status_t st = f.post_recv(f.ctx, links_[size_t(k.in_link)].peer, tag_hdr(k.in_seq) + 1, 0,
                                   k.rx_into, k.h.len, cookie_of(k_pay_rx, c));
    if (st == LOOM_ERR_NO_RESOURCE) {
        return false;
    }
    k.rx_posted = true;
    if (st != LOOM_SUCCESS) {
        rx_done(c, st, false);
    }
    return true;
}

void forward_endpoint::rx_done(uint32_t c, loom_status_t st, bool withdrawn) {
    chunk& k = chunks_[c];
    if (k.h.dst != rank_) {
        // Forwarded: the payload is in buffer k.buf; send it on. A failed or revoked read
        // still goes on (the destination waits for every chunk), flagged as void: the
        // destination completes the receive with PEER_FAILURE and `withdrawn`.
        if (st != LOOM_SUCCESS || withdrawn) {
            k.h.flags |= flag_withdrawn;  // the bytes are void: say so downstream
        }
        k.data = bufs_[size_t(k.buf)].get();
        start_tx(c);
        return;
    }
    if (k.orphan) {
        free_chunk(c);  // the rest of a cancelled receive, caught in the sink
        return;
    }
    in_msg& m = msgs_[size_t(k.msg)];
    if (st != LOOM_SUCCESS && m.status == LOOM_SUCCESS) {
        m.status = st;
    }
    if ((k.h.flags & flag_withdrawn) != 0 && m.status == LOOM_SUCCESS) {
        m.status = LOOM_ERR_PEER_FAILURE;
    }
    m.withdrawn = m.withdrawn || withdrawn || (k.h.flags & flag_withdrawn) != 0;
    if (k.early >= 0) {
        if (m.rop < 0 && !m.drain) {
            k.state = ch_state::parked;  // landed early: waits for its receive
            park(k.msg, c);
            return;
        }
        if (!m.drain) {
            std::memcpy(ops_[size_t(m.rop)].dst + k.h.offset, early_data(k), k.h.len);
        }
    }
    m.done_bytes += k.h.len;
    int mi = k.msg;
    free_chunk(c);
    msg_progress(mi);
}

int forward_endpoint::find_msg(int src, uint64_t tag) const {
    for (int m : live_msgs_) {
        if (msgs_[size_t(m)].src == src && msgs_[size_t(m)].tag == tag) {
            return m;
        }
    }
    return -1;
}

// Completes the matched receive or frees a drained message once every byte arrived.
void forward_endpoint::msg_progress(int mi) {
    in_msg& m = msgs_[size_t(mi)];
    if (m.done_bytes < m.total || (m.rop < 0 && !m.drain)) {
        return;
    }
    if (m.rop >= 0) {
        completion c{0, m.status, m.src, m.total, m.tag, m.imm};
        c.withdrawn = m.withdrawn;
        finish(m.rop, c);
    }
    m.live        = false;
    m.parked_head = m.parked_tail = -1;
    unlist_msg(mi);
    free_msgs_.push_back(mi);
}

void forward_endpoint::drain_parked(int mi) {
    in_msg& m     = msgs_[size_t(mi)];
    int next      = m.parked_head;
    m.parked_head = m.parked_tail = -1;
    while (next >= 0) {
        auto c     = uint32_t(next);
        next       = chunks_[c].next;
        user_op* o = m.rop >= 0 ? &ops_[size_t(m.rop)] : nullptr;
        if (chunks_[c].h.len == 0) {
            free_chunk(c);
            continue;
        }
        if (chunks_[c].early >= 0) {  // landed early: copy out (unless drained) and done
            if (!m.drain && o != nullptr) {
                std::memcpy(o->dst + chunks_[c].h.offset, early_data(chunks_[c]), chunks_[c].h.len);
            }
            m.done_bytes += chunks_[c].h.len;
            free_chunk(c);
            continue;
        }
        start_rx(c, m.drain || o == nullptr ? sink_.get() : o->dst + chunks_[c].h.offset);
    }
}

// Receive r meets message m: matched, or a mismatch (receive completes, message drains).
void forward_endpoint::match(int mi, int r) {
    in_msg& m  = msgs_[size_t(mi)];
    user_op& o = ops_[size_t(r)];
    if (o.imm != m.imm || o.len != m.total) {
        finish(r, completion{0, LOOM_ERR_MISMATCH, m.src, size_t(m.total), m.tag, m.imm});
        m.drain = true;
    } else {
        m.rop = r;
        o.msg = mi;
        unlist_recv(r);
    }
    drain_parked(mi);
    msg_progress(mi);
}

void forward_endpoint::deliver(uint32_t c) {
    chunk& k = chunks_[c];
    int mi   = find_msg(k.h.src, k.h.tag);
    if (mi < 0) {
        if (free_msgs_.empty()) {
            // Cannot happen: messages are bounded by chunks, which are bounded likewise.
            free_chunk(c);
            return;
        }
        mi = free_msgs_.back();
        free_msgs_.pop_back();
        in_msg& m     = msgs_[size_t(mi)];
        m.live        = true;
        m.src         = k.h.src;
        m.tag         = k.h.tag;
        m.imm         = k.h.imm;
        m.total       = k.h.total;
        m.rop         = -1;
        m.drain       = false;
        m.withdrawn   = false;
        m.status      = LOOM_SUCCESS;
        m.done_bytes  = 0;
        m.parked_head = m.parked_tail = -1;
        live_msgs_.push_back(mi);
        k.msg = mi;
        park(mi, c);
        k.state   = ch_state::parked;
        int other = -1;
        for (int r : open_recvs_) {
            const user_op& o = ops_[size_t(r)];
            if (o.peer != m.src) {
                continue;
            }
            if (o.tag == m.tag) {
                match(mi, r);
                return;
            }
            if (other < 0 && same_call_other_imm(o.tag, o.imm, m.tag, m.imm)) {
                other = r;
            }
        }
        if (other >= 0) {
            finish(other, completion{0, LOOM_ERR_MISMATCH, m.src, size_t(m.total), m.tag, m.imm});
        }
        read_early(mi);
        return;
    }
    in_msg& m = msgs_[size_t(mi)];
    k.msg     = mi;
    k.state   = ch_state::parked;
    park(mi, c);
    if (m.rop >= 0 || m.drain) {
        drain_parked(mi);
        msg_progress(mi);
    } else {
        read_early(mi);
    }
}

// Message m has no receive yet: read the payloads of its parked chunks into private
// buffers now, so that the upstream router's forwarding buffers are freed instead of
// waiting for the receive (a router blocked behind them may carry the traffic that the
// receive is waiting for). Bounded by the chunk entries (max_ops).
void forward_endpoint::read_early(int mi) {
    in_msg& m     = msgs_[size_t(mi)];
    int next      = m.parked_head;
    m.parked_head = m.parked_tail = -1;
    while (next >= 0) {
        auto c   = uint32_t(next);
        chunk& k = chunks_[c];
        next     = k.next;
        if (k.h.len == 0 || k.early >= 0) {
            park(mi, c);
            continue;
        }
        k.early = take_early();
        start_rx(c, early_data(k));
    }
}

void forward_endpoint::on_header(int link, uint32_t slot, loom_status_t st) {
    link_state& l = links_[size_t(link)];
    header h      = l.hdr[slot];
    uint32_t seq  = l.hdr_seq[slot];
    if (st != LOOM_SUCCESS) {
        return;  // the link failed: its receives are gone (no repost)
    }
    bool blocked = h.dst != rank_ && h.len > 0 && waiting_chunks_ >= cfg_.max_ops / 8 &&
                   free_bufs_[size_t(class_of(h, link))].empty();
    if (free_chunks_.empty() || blocked) {
        // No chunk entry, or a forwarded chunk whose class is busy while an eighth of the
        // entries already wait for theirs (the rest are kept for the sources and for
        // arrivals): the header waits in its slot, unposted, so that link slows down
        // (back-pressure) instead of losing it; pump() takes it up again.
        stalled_.push_back(uint32_t(link) * cfg_.headers + slot);
        return;
    }
    int c           = take_chunk();  // before the repost, which may handle other arrivals
    l.hdr_seq[slot] = l.rx_seq++;
    post_header_rx(link, slot);
    ++l.stat.recv_msgs;
    l.stat.recv_bytes += h.len;
    chunk& k  = chunks_[size_t(c)];
    k.h       = h;
    k.in_link = link;
    k.in_seq  = seq;
    if (h.dst != rank_) {
        if (h.len == 0) {
            start_tx(uint32_t(c));
            return;
        }
        k.cls = class_of(h, link);
        if (free_bufs_[size_t(k.cls)].empty()) {
            // Its channel's buffers are busy: the chunk waits (its payload with the inner
            // driver, back-pressuring the upstream send), the link's other classes go on.
            k.state = ch_state::waiting;
            waiting_[size_t(k.cls)].push_back(uint32_t(c));
            ++waiting_chunks_;
            return;
        }
        k.buf = free_bufs_[size_t(k.cls)].back();
        free_bufs_[size_t(k.cls)].pop_back();
        start_rx(uint32_t(c), bufs_[size_t(k.buf)].get());
        return;
    }
    if ((h.flags & flag_control) != 0) {
        done_.push_back(completion{control_cookie, LOOM_SUCCESS, h.src, 0, h.tag, h.imm});
        free_chunk(uint32_t(c));
        return;
    }
    deliver(uint32_t(c));
}

void forward_endpoint::handle(const completion& c) {
    if (c.cookie == control_cookie) {
        done_.push_back(c);  // a notice from a neighbour sent to itself: not ours, pass on
        return;
    }
    auto k     = kind(c.cookie >> 56);
    uint64_t i = c.cookie & ((uint64_t{1} << 56) - 1);
    switch (k) {
        case k_hdr_rx:
            on_header(int(i / cfg_.headers), uint32_t(i % cfg_.headers), c.status);
            break;
        case k_pay_rx:
            rx_done(uint32_t(i), c.status, c.withdrawn);
            break;
        case k_tx_hdr:
        case k_tx_pay:
            tx_done(uint32_t(i), c.status);
            break;
        case k_self:
            finish(int(i), c);
            break;
    }
}

loom_status_t forward_endpoint::post_recv(int peer, uint64_t tag, uint64_t imm, void* buf,
                                          size_t len, uint64_t cookie) {
    if (peer < 0 || peer >= shape_.size() || (buf == nullptr && len > 0)) {
        return LOOM_ERR_INVALID_ARGUMENT;
    }
    int i = take_op();
    if (i < 0) {
        return LOOM_ERR_NO_RESOURCE;
    }
    user_op& o = ops_[size_t(i)];
    o.cookie   = cookie;
    if (peer == rank_) {
        o.kind             = op_kind::self;
        const fast_path& f = inner_->fast();
        loom_status_t st   = f.post_recv(f.ctx, peer, tag, imm, buf, len, cookie_of(k_self, i));
        if (st != LOOM_SUCCESS) {
            release_op(i);
        }
        return st;
    }
    o.kind = op_kind::recv;
    o.peer = peer;
    o.tag  = tag;
    o.imm  = imm;
    o.dst  = static_cast<uint8_t*>(buf);
    o.len  = len;
    for (int m : live_msgs_) {
        const in_msg& x = msgs_[size_t(m)];
        if (x.src == peer && x.rop < 0 && !x.drain && x.tag == tag) {
            match(m, i);
            return LOOM_SUCCESS;
        }
    }
    for (int m : live_msgs_) {
        const in_msg& x = msgs_[size_t(m)];
        if (x.src == peer && x.rop < 0 && !x.drain && same_call_other_imm(tag, imm, x.tag, x.imm)) {
            finish(i, completion{0, LOOM_ERR_MISMATCH, peer, size_t(x.total), x.tag, x.imm});
            return LOOM_SUCCESS;
        }
    }
    o.listed = true;
    open_recvs_.push_back(i);
    return LOOM_SUCCESS;
}

int forward_endpoint::poll(completion* out, int max) {
    const fast_path& f = inner_->fast();
    completion c[32];
    for (int round = 0; round < 4; ++round) {
        int n = f.poll(f.ctx, c, 32);
        for (int j = 0; j < n; ++j) {
            handle(c[j]);
        }
        if (n < 32) {
            break;
        }
    }
    for (size_t n = retry_.size(); n > 0; --n) {
        uint32_t k = retry_.front();
        retry_.pop_front();
        bool ok = chunks_[k].state == ch_state::tx ? try_tx(k) : try_rx(k);
        if (!ok) {
            retry_.push_back(k);
        }
    }
    pump();
    int got = 0;
    while (got < max && !done_.empty()) {
        out[got++] = done_.front();
        done_.pop_front();
    }
    return got;
}

bool forward_endpoint::pending() const {
    return live_ops_ > 0 || !done_.empty() || !retry_.empty() || !stalled_.empty() ||
           live_chunks_ > 0;
}

bool forward_endpoint::cancel(uint64_t cookie) {
    int i = -1;
    for (size_t r = 0; r < ops_.size(); ++r) {
        if (ops_[r].live && !ops_[r].cancelled && ops_[r].cookie == cookie) {
            i = int(r);
            break;
        }
    }
    if (i < 0) {
        return false;
    }
    user_op& o = ops_[size_t(i)];
    if (o.kind == op_kind::self) {
        const fast_path& f = inner_->fast();
        if (!f.cancel(f.ctx, cookie_of(k_self, uint64_t(i)))) {
            return false;
        }
        release_op(i);
        return true;
    }
    if (o.kind == op_kind::send) {
        // The rest goes on from a private copy: the receiver waits for every chunk.
        o.cancelled = true;
        o.copy      = std::make_unique_for_overwrite<uint8_t[]>(std::max<size_t>(o.len, 1));
        if (o.len > 0) {
            std::memcpy(o.copy.get(), o.src, o.len);
        }
        o.src              = o.copy.get();
        const fast_path& f = inner_->fast();
        for (size_t c = 0; c < chunks_.size() && ops_[size_t(i)].live; ++c) {
            chunk& k = chunks_[c];
            if (k.state != ch_state::tx || k.sop != i) {
                continue;
            }
            if (!k.pay_posted) {
                k.data = o.copy.get() + k.h.offset;
            } else if (k.h.len > 0 && f.cancel(f.ctx, cookie_of(k_tx_pay, c))) {
                // The inner driver finishes it from its own copy (or revokes it): done here.
                tx_done(uint32_t(c), LOOM_SUCCESS);
            }
        }
        return true;
    }
    // A receive: an unmatched one is simply withdrawn; a matched one drains the rest.
    o.cancelled = true;
    if (o.msg < 0) {
        release_op(i);
        return true;
    }
    in_msg& m          = msgs_[size_t(o.msg)];
    const fast_path& f = inner_->fast();
    for (size_t c = 0; c < chunks_.size(); ++c) {
        chunk& k = chunks_[c];
        if (k.state != ch_state::pay_rx || k.msg != o.msg || k.early >= 0) {
            continue;  // (an early read lands in its own buffer and is dropped: m.drain)
        }
        if (!k.rx_posted) {
            k.rx_into = sink_.get();  // still to post (retry): into the sink instead
            continue;
        }
        if (f.cancel(f.ctx, cookie_of(k_pay_rx, c))) {
            // The inner driver drained the payload if it was being read; otherwise the
            // payload is still to come, and a sink receive must take it (the upstream
            // rank's send waits for it). Which of the two is not known here, so the sink
            // receive is posted either way and left as an orphan: not pending, freed if
            // it ever completes.
            m.done_bytes += k.h.len;
            k.msg     = -1;
            k.orphan  = true;
            k.rx_into = sink_.get();
            --live_chunks_;
            if (!try_rx(uint32_t(c))) {
                retry_.push_back(uint32_t(c));
            }
        }
    }
    m.rop   = -1;
    m.drain = true;
    release_op(i);
    drain_parked(int(&m - msgs_.data()));
    msg_progress(int(&m - msgs_.data()));
    return true;
}

std::vector<link_stat> forward_endpoint::stats() const {
    std::vector<link_stat> v;
    for (const link_state& l : links_) {
        v.push_back(l.stat);
    }
    return v;
}

}  // namespace

result<forward_config> config_from_params(const std::string& fabric) {
    forward_config c;
    c.fabric      = fabric.empty() ? routing::params::fabric.get() : fabric;
    c.ties        = routing::params::route_ties.get();
    int64_t chunk = params::chunk.get();
    int64_t bufs  = params::buffers.get();
    int64_t ops   = params::max_ops.get();
    if (chunk < 1 || chunk > (int64_t{1} << 30) || bufs < 1 || bufs > (int64_t{1} << 20) ||
        ops < 16 || ops > (int64_t{1} << 24)) {
        return invalid_argument(
            "LOOM_FWD_CHUNK must lie in 1..2^30, LOOM_FWD_BUFFERS in "
            "1..2^20 and LOOM_FWD_MAX_OPS in 16..2^24");
    }
    c.max_ops = uint32_t(ops);
    c.chunk   = size_t(chunk);
    c.buffers = uint32_t(bufs);
    return c;
}

result<std::unique_ptr<endpoint>> open(std::string_view inner_name, const endpoint_config& config) {
    LOOM_ASSIGN(auto c, config_from_params(config.fabric));
    if (c.fabric.empty()) {
        return invalid_argument(
            "fwd: no fabric: set endpoint_config.fabric or LOOM_FABRIC "
            "(torus:…, mesh:…, ring:…)");
    }
    LOOM_ASSIGN(auto s, topology::shape::parse(c.fabric));
    if (s.size() != config.size) {
        return invalid_argument("fwd: fabric " + c.fabric + " has " + std::to_string(s.size()) +
                                " ranks, the job " + std::to_string(config.size));
    }
    routing::tie_rule ties;
    if (!routing::parse_tie_rule(c.ties, &ties)) {
        return invalid_argument("LOOM_ROUTE_TIES=" + c.ties + " (toward-plus or source-parity)");
    }
    endpoint_config inner_cfg = config;
    inner_cfg.peers           = s.neighbours(config.rank);
    if (inner_cfg.peers.empty()) {
        inner_cfg.peers.push_back(config.rank);  // empty means "all": name ourselves instead
    }
    LOOM_ASSIGN(auto inner, drivers::open(inner_name, inner_cfg));
    return std::unique_ptr<endpoint>(
        new forward_endpoint(std::move(inner), c, s, ties, config.rank));
}

}  // namespace forward

std::vector<link_stat> link_stats(const endpoint& ep) {
    const auto* f = dynamic_cast<const forward::forward_endpoint*>(&ep);
    return f != nullptr ? f->stats() : std::vector<link_stat>{};
}

}  // namespace loom::drivers
