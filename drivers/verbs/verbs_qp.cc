// SPDX-License-Identifier: Apache-2.0
// Queue pairs: one RC queue pair per peer, its connection data exchanged through the job's
// kv_store, and the state machine RESET -> INIT -> RTR -> RTS with the attributes each
// transition requires.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/check.hh"
#include "base/log.hh"
#include "drivers/verbs/verbs.hh"

namespace loom::drivers::verbs {
namespace {

// RC timers and retries: a lost packet is retried 7 times after 4.096 us x 2^14 (~67 ms)
// each before the completion reports IBV_WC_RETRY_EXC_ERR (the peer is gone); RNR retry 7
// retries without bound while the peer has no receive buffer posted (back-pressure).
constexpr uint8_t ack_timeout   = 14;
constexpr uint8_t retry_count   = 7;
constexpr uint8_t rnr_retry     = 7;
constexpr uint8_t min_rnr_timer = 12;  // 0.64 ms

std::string gid_hex(const ibv_gid& g) {
    char out[33];
    for (int i = 0; i < 16; ++i) {
        std::snprintf(out + 2 * i, 3, "%02x", g.raw[i]);
    }
    return std::string(out, 32);
}

status step_failed(int rank, int peer, const char* step, int rc) {
    return system_error("verbs: rank " + std::to_string(rank) + ": queue pair to rank " +
                        std::to_string(peer) + ": " + step +
                        " failed: " + std::strerror(rc > 0 ? rc : errno));
}

}  // namespace

std::string to_string(const conn_info& c) {
    char head[64];
    std::snprintf(head, sizeof head, "%" PRIu32 ":%u:", c.qpn, unsigned(c.lid));
    return head + gid_hex(c.gid) + ":" + std::to_string(c.psn);
}

bool parse_conn_info(const std::string& text, conn_info* out) {
    unsigned qpn = 0, lid = 0, psn = 0;
    char gid[33] = {};
    if (std::sscanf(text.c_str(), "%u:%u:%32[0-9a-f]:%u", &qpn, &lid, gid, &psn) != 4 ||
        std::strlen(gid) != 32 || lid > 0xffff || psn > 0xffffff) {
        return false;
    }
    out->qpn = qpn;
    out->lid = uint16_t(lid);
    out->psn = psn;
    for (int i = 0; i < 16; ++i) {
        unsigned byte = 0;
        std::sscanf(gid + 2 * i, "%2x", &byte);
        out->gid.raw[i] = uint8_t(byte);
    }
    return true;
}

status to_init(const verbs_api& api, ibv_qp* qp, const port_info& port, int rank, int peer) {
    ibv_qp_attr a{};
    a.qp_state        = IBV_QPS_INIT;
    a.pkey_index      = 0;
    a.port_num        = port.port;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (int rc = api.modify_qp(
            qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        return step_failed(rank, peer, "RESET -> INIT", rc);
    }
    return {};
}

status to_rtr_rts(const verbs_api& api, ibv_qp* qp, const port_info& port, const conn_info& local,
                  const conn_info& remote, int rank, int peer) {
    ibv_qp_attr a{};
    a.qp_state           = IBV_QPS_RTR;
    a.path_mtu           = port.mtu;
    a.dest_qp_num        = remote.qpn;
    a.rq_psn             = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer      = min_rnr_timer;
    a.ah_attr.port_num   = port.port;
    a.ah_attr.dlid       = remote.lid;
    if (port.gid_index >= 0) {
        a.ah_attr.is_global      = 1;
        a.ah_attr.grh.dgid       = remote.gid;
        a.ah_attr.grh.sgid_index = uint8_t(port.gid_index);
        a.ah_attr.grh.hop_limit  = 64;
    }
    if (int rc =
            api.modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        return step_failed(rank, peer, "INIT -> RTR", rc);
    }
    ibv_qp_attr b{};
    b.qp_state      = IBV_QPS_RTS;
    b.timeout       = ack_timeout;
    b.retry_cnt     = retry_count;
    b.rnr_retry     = rnr_retry;
    b.sq_psn        = local.psn;
    b.max_rd_atomic = 1;
    if (int rc = api.modify_qp(qp, &b,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
        return step_failed(rank, peer, "RTR -> RTS", rc);
    }
    return {};
}

// Every peer's queue pair, taken to INIT, its receive buffers posted.
status verbs_endpoint::create_queue_pairs() {
    std::random_device seed;
    std::mt19937 gen(seed());
    uint32_t recv_next = 0, send_next = 0;
    for (int r : peer_ranks_) {
        peer& p = peers_[size_t(r)];
        p.rank  = r;
        ibv_qp_init_attr init{};
        init.send_cq          = cq_;
        init.recv_cq          = cq_;
        init.qp_type          = IBV_QPT_RC;
        init.cap.max_send_wr  = 4 * settings_.send_queue;  // user sends, replies, writes
        init.cap.max_recv_wr  = settings_.recv_depth;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        p.qp                  = api_.create_qp(pd_, &init);
        if (p.qp == nullptr) {
            return system_error("verbs: rank " + std::to_string(config_.rank) +
                                ": ibv_create_qp toward rank " + std::to_string(r) + " on " +
                                device_name_ + " failed: " + std::strerror(errno));
        }
        p.local = conn_info{p.qp->qp_num, port_.lid, port_.gid, uint32_t(gen()) & 0xffffff};
        LOOM_CHECK(to_init(api_, p.qp, port_, config_.rank, r));
        p.recv_base = recv_next;
        p.send_base = send_next;
        recv_next += settings_.recv_depth;
        send_next += 2 * settings_.send_queue;
        for (uint32_t i = settings_.send_queue; i-- > 0;) {
            p.free_sends.push_back(p.send_base + i);
            p.free_replies.push_back(p.send_base + settings_.send_queue + i);
        }
        p.replies_waiting.reserve(2 * settings_.send_queue);
        for (uint32_t i = 0; i < settings_.recv_depth; ++i) {
            repost(p, p.recv_base + i);
        }
        if (p.failed) {
            return errors_[size_t(r)];
        }
    }
    return {};
}

// Publishes each queue pair's connection data, reads the peers' and moves to RTS.
status verbs_endpoint::exchange_and_connect() {
    std::string me = std::to_string(config_.rank);
    for (int r : peer_ranks_) {
        LOOM_CHECK(config_.store->set("verbs/" + me + "/" + std::to_string(r),
                                      to_string(peers_[size_t(r)].local)));
    }
    for (int r : peer_ranks_) {
        peer& p         = peers_[size_t(r)];
        std::string key = "verbs/" + std::to_string(r) + "/" + me;
        auto text       = config_.store->get(key, config_.timeout_s);
        if (!text) {
            return status(text.error().code(),
                          "verbs: rank " + me + ": no connection data from rank " +
                              std::to_string(r) + " (" + text.error().message() + ")");
        }
        conn_info remote;
        if (!parse_conn_info(*text, &remote)) {
            return invalid_argument("verbs: rank " + me + ": rank " + std::to_string(r) +
                                    " published unreadable connection data '" + *text + "' under " +
                                    key);
        }
        LOOM_CHECK(to_rtr_rts(api_, p.qp, port_, p.local, remote, config_.rank, r));
    }
    return {};
}

}  // namespace loom::drivers::verbs
