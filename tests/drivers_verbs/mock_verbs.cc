// SPDX-License-Identifier: Apache-2.0
// The simulated HCA (mock_verbs.hh): objects in process memory, one lock over all of them
// (endpoints connect from threads), deliveries done when a request is posted or a receive
// frees the way.
#include "mock_verbs.hh"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

namespace loom::test::mock_verbs {
namespace {

struct mock_qp;

struct mock_channel {
    ibv_comp_channel channel{};
    std::deque<ibv_cq*> events;  // one per event raised, read by get_cq_event
};

struct mock_cq {
    ibv_cq cq{};
    std::deque<ibv_wc> wcs;
    mock_channel* channel = nullptr;
    bool armed            = false;  // req_notify_cq: the next completion raises an event
};

struct mock_mr {
    ibv_mr mr{};
    int access = 0;
    bool live  = true;
};

struct mock_recv {
    uint64_t wr_id;
    ibv_sge sge;
};

struct mock_send {
    uint64_t wr_id;
    ibv_wr_opcode opcode;
    ibv_sge sge;
    bool signaled;
    uint32_t imm;
    uint64_t remote_addr;
    uint32_t rkey;
};

struct mock_qp {
    ibv_qp qp{};
    int host      = 0;
    uint32_t dest = 0;
    bool live     = true;
    std::deque<mock_recv> recvs;
    std::deque<mock_send> backlog;  // waiting for a receive at the peer (RNR)
};

struct hca {
    std::mutex mu;
    settings s;
    int hosts         = 0;
    uint32_t next_qpn = 100;
    uint32_t next_key = 1000;
    std::vector<std::unique_ptr<ibv_context>> contexts;
    std::vector<std::unique_ptr<ibv_pd>> pds;
    std::vector<std::unique_ptr<mock_cq>> cqs;
    std::vector<std::unique_ptr<mock_channel>> channels;
    std::map<uint32_t, std::unique_ptr<mock_qp>> qps;
    std::vector<std::unique_ptr<mock_mr>> mrs;
    std::map<int, ibv_wc_status> failing;  // host -> the status its deliveries end with
    std::vector<transition> log;
    std::vector<write_record> writes;
    uint64_t sends = 0, regs = 0, dmabuf_regs = 0;
    size_t live                = 0;
    char device_names[4][8]    = {"mock0", "mock1", "mock2", "mock3"};
    ibv_device* device_list[5] = {};
};

hca& the() {
    static hca h;
    return h;
}

int host_of(ibv_context* c) {
    hca& h = the();
    for (size_t i = 0; i < h.contexts.size(); ++i) {
        if (h.contexts[i].get() == c) {
            return int(i);
        }
    }
    return -1;
}

mock_qp* as_mock(ibv_qp* q) {
    return reinterpret_cast<mock_qp*>(q);  // ibv_qp is the first member
}

// The live registration with `key` (lkey or rkey) of protection domain `pd` covering
// [addr, addr + len), or null.
mock_mr* covering(uint32_t key, ibv_pd* pd, uint64_t addr, uint64_t len, bool remote) {
    for (auto& m : the().mrs) {
        uint32_t k = remote ? m->mr.rkey : m->mr.lkey;
        if (m->live && k == key && m->mr.pd == pd) {
            auto base = reinterpret_cast<uintptr_t>(m->mr.addr);
            if (addr >= base && addr + len <= base + m->mr.length &&
                (!remote || (m->access & IBV_ACCESS_REMOTE_WRITE) != 0)) {
                return m.get();
            }
            return nullptr;
        }
    }
    return nullptr;
}

void push_wc(ibv_cq* cq, uint64_t wr_id, ibv_wc_status st, ibv_wc_opcode opcode, uint32_t bytes,
             uint32_t imm = 0, unsigned flags = 0) {
    ibv_wc wc{};
    wc.wr_id    = wr_id;
    wc.status   = st;
    wc.opcode   = opcode;
    wc.byte_len = bytes;
    wc.imm_data = imm;
    wc.wc_flags = flags;
    auto* m     = reinterpret_cast<mock_cq*>(cq);
    m->wcs.push_back(wc);
    if (m->armed && m->channel != nullptr) {
        m->armed = false;
        m->channel->events.push_back(cq);
        uint64_t one = 1;
        (void)!::write(m->channel->channel.fd, &one, sizeof one);
    }
}

// `q` goes to ERR: the request at the front ends with `st`, every other one flushes.
void break_qp(mock_qp* q, ibv_wc_status st) {
    q->qp.state = IBV_QPS_ERR;
    bool first  = true;
    for (const mock_send& s : q->backlog) {
        push_wc(q->qp.send_cq, s.wr_id, first ? st : IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0);
        first = false;
    }
    q->backlog.clear();
    for (const mock_recv& r : q->recvs) {
        push_wc(q->qp.recv_cq, r.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0);
    }
    q->recvs.clear();
}

// Delivers what `q` has waiting, in order, as far as the peer has receives posted.
void pump(mock_qp* q) {
    hca& h = the();
    while (!q->backlog.empty() && q->qp.state == IBV_QPS_RTS) {
        if (auto f = h.failing.find(q->host); f != h.failing.end()) {
            break_qp(q, f->second);
            return;
        }
        auto it = h.qps.find(q->dest);
        if (it == h.qps.end() || !it->second->live || it->second->qp.state == IBV_QPS_ERR) {
            break_qp(q, IBV_WC_RETRY_EXC_ERR);
            return;
        }
        mock_qp* t = it->second.get();
        if (t->recvs.empty()) {
            return;  // receiver not ready: the HCA retries later
        }
        const mock_send& s = q->backlog.front();
        const mock_recv r  = t->recvs.front();
        if (s.opcode == IBV_WR_SEND) {
            if (s.sge.length > r.sge.length) {
                break_qp(q, IBV_WC_REM_INV_REQ_ERR);
                return;
            }
            t->recvs.pop_front();
            std::memcpy(reinterpret_cast<void*>(r.sge.addr), reinterpret_cast<void*>(s.sge.addr),
                        s.sge.length);
            ++h.sends;
            push_wc(t->qp.recv_cq, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, s.sge.length);
            if (s.signaled) {
                push_wc(q->qp.send_cq, s.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, s.sge.length);
            }
        } else {  // RDMA write with immediate
            if (covering(s.rkey, t->qp.pd, s.remote_addr, s.sge.length, true) == nullptr) {
                break_qp(q, IBV_WC_REM_ACCESS_ERR);
                return;
            }
            t->recvs.pop_front();
            std::memcpy(reinterpret_cast<void*>(s.remote_addr), reinterpret_cast<void*>(s.sge.addr),
                        s.sge.length);
            h.writes.push_back(
                {uintptr_t(s.sge.addr), uintptr_t(s.remote_addr), s.sge.length, s.imm});
            push_wc(t->qp.recv_cq, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, s.sge.length,
                    s.imm, IBV_WC_WITH_IMM);
            if (s.signaled) {
                push_wc(q->qp.send_cq, s.wr_id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, s.sge.length);
            }
        }
        q->backlog.pop_front();
    }
}

void pump_all() {
    for (auto& [n, q] : the().qps) {
        if (q->live) {
            pump(q.get());
        }
    }
}

// ---- the table ----

ibv_device** get_device_list(int* n) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    *n = h.s.devices;
    for (int i = 0; i < h.s.devices && i < 4; ++i) {
        h.device_list[i] = reinterpret_cast<ibv_device*>(h.device_names[i]);
    }
    h.device_list[std::min(h.s.devices, 4)] = nullptr;
    return h.device_list;
}
void free_device_list(ibv_device**) {}
const char* get_device_name(ibv_device* d) {
    return reinterpret_cast<const char*>(d);
}
ibv_context* open_device(ibv_device*) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    h.contexts.push_back(std::make_unique<ibv_context>());
    ++h.live;
    return h.contexts.back().get();
}
int close_device(ibv_context*) {
    std::lock_guard lock(the().mu);
    --the().live;
    return 0;
}
int query_port(ibv_context* c, uint8_t port, ibv_port_attr* a) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    if (port != 1) {
        return EINVAL;
    }
    *a            = ibv_port_attr{};
    a->state      = IBV_PORT_ACTIVE;
    a->active_mtu = IBV_MTU_4096;
    a->lid        = h.s.ethernet ? 0 : uint16_t(1 + host_of(c));
    a->link_layer = h.s.ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    return 0;
}
int query_gid(ibv_context* c, uint8_t, int index, ibv_gid* gid) {
    std::lock_guard lock(the().mu);
    if (index < 0 || index > 3) {
        return EINVAL;
    }
    std::memset(gid, 0, sizeof *gid);
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    gid->raw[15] = uint8_t(1 + host_of(c));
    return 0;
}
ibv_pd* alloc_pd(ibv_context* c) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    h.pds.push_back(std::make_unique<ibv_pd>());
    h.pds.back()->context = c;
    ++h.live;
    return h.pds.back().get();
}
int dealloc_pd(ibv_pd*) {
    std::lock_guard lock(the().mu);
    --the().live;
    return 0;
}
ibv_cq* create_cq(ibv_context* c, int, void*, ibv_comp_channel* channel, int) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    h.cqs.push_back(std::make_unique<mock_cq>());
    h.cqs.back()->cq.context = c;
    h.cqs.back()->channel    = reinterpret_cast<mock_channel*>(channel);
    ++h.live;
    return &h.cqs.back()->cq;
}
int destroy_cq(ibv_cq*) {
    std::lock_guard lock(the().mu);
    --the().live;
    return 0;
}
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    if (attr->qp_type != IBV_QPT_RC || attr->send_cq == nullptr || attr->recv_cq == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto q              = std::make_unique<mock_qp>();
    q->qp.qp_num        = h.next_qpn++;
    q->qp.state         = IBV_QPS_RESET;
    q->qp.pd            = pd;
    q->qp.context       = pd->context;
    q->qp.send_cq       = attr->send_cq;
    q->qp.recv_cq       = attr->recv_cq;
    q->qp.qp_type       = IBV_QPT_RC;
    q->host             = host_of(pd->context);
    ibv_qp* result      = &q->qp;
    h.qps[q->qp.qp_num] = std::move(q);
    ++h.live;
    return result;
}
int destroy_qp(ibv_qp* q) {
    std::lock_guard lock(the().mu);
    as_mock(q)->live = false;
    --the().live;
    return 0;
}

// The masks verbs requires for each RC transition (the driver may add optional ones).
int required_mask(ibv_qp_state from, ibv_qp_state to) {
    if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
        return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    }
    if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
        return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
        return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
               IBV_QP_MAX_QP_RD_ATOMIC;
    }
    if (to == IBV_QPS_ERR) {
        return IBV_QP_STATE;
    }
    return -1;  // not a transition verbs allows
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    mock_qp* q      = as_mock(qp);
    ibv_qp_state to = (mask & IBV_QP_STATE) != 0 ? attr->qp_state : qp->state;
    int need        = required_mask(qp->state, to);
    h.log.push_back({q->host, qp->qp_num, qp->state, to, mask, *attr});
    if (need < 0 || (mask & need) != need || int(to) == h.s.fail_to) {
        return EINVAL;
    }
    if (to == IBV_QPS_RTR) {
        q->dest = attr->dest_qp_num;
    }
    if (to == IBV_QPS_ERR) {
        break_qp(q, IBV_WC_WR_FLUSH_ERR);
    }
    qp->state = to;
    return 0;
}

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t len, int access) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    auto m       = std::make_unique<mock_mr>();
    m->mr.pd     = pd;
    m->mr.addr   = addr;
    m->mr.length = len;
    m->mr.lkey   = h.next_key++;
    m->mr.rkey   = h.next_key++;
    m->access    = access;
    ++h.regs;
    ++h.live;
    h.mrs.push_back(std::move(m));
    return &h.mrs.back()->mr;
}
ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t len, uint64_t, int fd, int access) {
    if (fd < 0) {
        errno = EBADF;
        return nullptr;
    }
    ibv_mr* mr = reg_mr(pd, reinterpret_cast<void*>(offset), len, access);
    std::lock_guard lock(the().mu);
    --the().regs;
    ++the().dmabuf_regs;
    return mr;
}
int dereg_mr(ibv_mr* mr) {
    std::lock_guard lock(the().mu);
    reinterpret_cast<mock_mr*>(mr)->live = false;
    --the().live;
    return 0;
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    mock_qp* q = as_mock(qp);
    for (; wr != nullptr; wr = wr->next) {
        if (qp->state == IBV_QPS_ERR) {
            push_wc(qp->send_cq, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0);
            continue;
        }
        if (qp->state != IBV_QPS_RTS || wr->num_sge != 1 ||
            (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) ||
            covering(wr->sg_list[0].lkey, qp->pd, wr->sg_list[0].addr, wr->sg_list[0].length,
                     false) == nullptr) {
            *bad = wr;
            return EINVAL;
        }
        q->backlog.push_back({wr->wr_id, wr->opcode, wr->sg_list[0],
                              (wr->send_flags & IBV_SEND_SIGNALED) != 0, wr->imm_data,
                              wr->wr.rdma.remote_addr, wr->wr.rdma.rkey});
    }
    pump(q);
    return 0;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    mock_qp* q = as_mock(qp);
    for (; wr != nullptr; wr = wr->next) {
        if (qp->state == IBV_QPS_RESET || wr->num_sge != 1 ||
            covering(wr->sg_list[0].lkey, qp->pd, wr->sg_list[0].addr, wr->sg_list[0].length,
                     false) == nullptr) {
            *bad = wr;
            return EINVAL;
        }
        if (qp->state == IBV_QPS_ERR) {
            push_wc(qp->recv_cq, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0);
            continue;
        }
        q->recvs.push_back({wr->wr_id, wr->sg_list[0]});
    }
    pump_all();
    return 0;
}

int poll_cq(ibv_cq* cq, int max, ibv_wc* out) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    pump_all();
    auto* m = reinterpret_cast<mock_cq*>(cq);
    int n   = 0;
    for (; n < max && !m->wcs.empty(); ++n) {
        out[n] = m->wcs.front();
        m->wcs.pop_front();
    }
    return n;
}

ibv_comp_channel* create_comp_channel(ibv_context* c) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    auto m             = std::make_unique<mock_channel>();
    m->channel.context = c;
    m->channel.fd      = ::eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE | EFD_CLOEXEC);
    if (m->channel.fd < 0) {
        return nullptr;
    }
    ++h.live;
    h.channels.push_back(std::move(m));
    return &h.channels.back()->channel;
}
int destroy_comp_channel(ibv_comp_channel* channel) {
    std::lock_guard lock(the().mu);
    ::close(channel->fd);
    channel->fd = -1;
    --the().live;
    return 0;
}
int req_notify_cq(ibv_cq* cq, int) {
    std::lock_guard lock(the().mu);
    reinterpret_cast<mock_cq*>(cq)->armed = true;
    return 0;
}
int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** ctx) {
    std::lock_guard lock(the().mu);
    auto* m = reinterpret_cast<mock_channel*>(channel);
    if (m->events.empty()) {
        errno = EAGAIN;
        return -1;
    }
    uint64_t v = 0;
    (void)!::read(channel->fd, &v, sizeof v);
    *cq = m->events.front();
    m->events.pop_front();
    *ctx = nullptr;
    return 0;
}
void ack_cq_events(ibv_cq*, unsigned int) {}

drivers::verbs::verbs_api table;

}  // namespace

const drivers::verbs::verbs_api& reset(const settings& s) {
    hca& h = the();
    std::lock_guard lock(h.mu);
    h.s = s;
    h.contexts.clear();
    h.pds.clear();
    h.cqs.clear();
    for (auto& c : h.channels) {
        if (c->channel.fd >= 0) {
            ::close(c->channel.fd);
        }
    }
    h.channels.clear();
    h.qps.clear();
    h.mrs.clear();
    h.failing.clear();
    h.log.clear();
    h.writes.clear();
    h.sends = h.regs = h.dmabuf_regs = 0;
    h.live                           = 0;
    table                            = drivers::verbs::verbs_api{
                                   .get_device_list      = get_device_list,
                                   .free_device_list     = free_device_list,
                                   .get_device_name      = get_device_name,
                                   .open_device          = open_device,
                                   .close_device         = close_device,
                                   .query_port           = query_port,
                                   .query_gid            = query_gid,
                                   .alloc_pd             = alloc_pd,
                                   .dealloc_pd           = dealloc_pd,
                                   .create_cq            = create_cq,
                                   .destroy_cq           = destroy_cq,
                                   .create_qp            = create_qp,
                                   .modify_qp            = modify_qp,
                                   .destroy_qp           = destroy_qp,
                                   .reg_mr               = reg_mr,
                                   .reg_dmabuf_mr        = s.dmabuf ? reg_dmabuf_mr : nullptr,
                                   .dereg_mr             = dereg_mr,
                                   .post_send            = post_send,
                                   .post_recv            = post_recv,
                                   .poll_cq              = poll_cq,
                                   .wc_status_str        = ibv_wc_status_str,
                                   .create_comp_channel  = create_comp_channel,
                                   .destroy_comp_channel = destroy_comp_channel,
                                   .req_notify_cq        = req_notify_cq,
                                   .get_cq_event         = get_cq_event,
                                   .ack_cq_events        = ack_cq_events,
    };
    return table;
}

const drivers::verbs::verbs_api& reset() {
    return reset(settings{});
}

void fail_host(int host, ibv_wc_status st) {
    std::lock_guard lock(the().mu);
    the().failing[host] = st;
}

std::vector<transition> transitions() {
    std::lock_guard lock(the().mu);
    return the().log;
}
std::vector<write_record> writes() {
    std::lock_guard lock(the().mu);
    return the().writes;
}
uint64_t sends() {
    std::lock_guard lock(the().mu);
    return the().sends;
}
uint64_t registrations() {
    std::lock_guard lock(the().mu);
    return the().regs;
}
uint64_t user_registrations() {
    std::lock_guard lock(the().mu);
    return the().regs - 2 * the().contexts.size();
}
uint64_t dmabuf_registrations() {
    std::lock_guard lock(the().mu);
    return the().dmabuf_regs;
}
size_t live_objects() {
    std::lock_guard lock(the().mu);
    return the().live;
}

}  // namespace loom::test::mock_verbs
