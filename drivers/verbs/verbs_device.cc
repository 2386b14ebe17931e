// SPDX-License-Identifier: Apache-2.0
// The verbs endpoint's device side: settings, the device and port it uses, the protection
// domain and completion queue, the registered rings of eager buffers, registration of user
// buffers (the cache's backend) and of dmabuf memory.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.hh"
#include "drivers/verbs/verbs.hh"
#include "drivers/verbs/verbs_params.hh"

namespace loom::drivers::verbs {
namespace {

constexpr int access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

bool port_is_ethernet(const ibv_port_attr& a) {
    return a.link_layer == IBV_LINK_LAYER_ETHERNET;
}

}  // namespace

result<settings> settings_from_params() {
    settings s;
    s.device        = params::device.get();
    int64_t port    = params::port.get();
    int64_t gid     = params::gid_index.get();
    int64_t eager   = params::eager_limit.get();
    int64_t depth   = params::recv_depth.get();
    int64_t queue   = params::send_queue.get();
    int64_t max_ops = params::max_ops.get();
    int64_t cache   = params::mr_cache.get();
    int64_t held    = params::unexpected_bytes.get();
    if (port < 1 || port > 255) {
        return invalid_argument("verbs: LOOM_VERBS_PORT=" + std::to_string(port) +
                                " is not a port number (1 to 255)");
    }
    if (gid < -1 || gid > 255) {
        return invalid_argument("verbs: LOOM_VERBS_GID_INDEX=" + std::to_string(gid) +
                                " is not -1 or a GID table index (0 to 255)");
    }
    if (eager < 64 || eager > (int64_t(1) << 20)) {
        return invalid_argument("verbs: LOOM_VERBS_EAGER_LIMIT=" + std::to_string(eager) +
                                " is outside 64 B to 1 MiB");
    }
    if (depth < 2 || depth > 4096 || queue < 1 || queue > 4096) {
        return invalid_argument(
            "verbs: LOOM_VERBS_RECV_DEPTH and LOOM_VERBS_SEND_QUEUE must lie in 2..4096 and "
            "1..4096");
    }
    if (max_ops < 1 || max_ops > (int64_t(1) << 24) || cache < 1 || cache > 65536) {
        return invalid_argument(
            "verbs: LOOM_VERBS_MAX_OPS must lie in 1..16777216 and LOOM_VERBS_MR_CACHE in "
            "1..65536");
    }
    if (held < 0) {
        return invalid_argument("verbs: LOOM_VERBS_UNEXPECTED_BYTES=" + std::to_string(held) +
                                " is negative");
    }
    s.unexpected_bytes = uint64_t(held);
    s.port             = uint8_t(port);
    s.gid_index        = int(gid);
    s.eager_limit      = uint64_t(eager);
    s.recv_depth       = uint32_t(depth);
    s.send_queue       = uint32_t(queue);
    s.max_ops          = uint32_t(max_ops);
    s.mr_cache         = uint32_t(cache);
    return s;
}

result<mr_backend::handle> mr_backend::add(void* base, size_t len) {
    ibv_mr* mr = api->reg_mr(pd, base, len, access_flags);
    if (mr == nullptr) {
        return status(LOOM_ERR_SYSTEM, std::string("verbs: ibv_reg_mr of ") + std::to_string(len) +
                                           " bytes failed: " + std::strerror(errno));
    }
    return mr;
}

void mr_backend::remove(handle& h) {
    if (h != nullptr) {
        api->dereg_mr(h);
        h = nullptr;
    }
}

// The device LOOM_VERBS_DEVICE names, else the first whose port is active; its port
// attributes decide how peers address the queue pairs (LID, or a GID on Ethernet).
status verbs_endpoint::open_device() {
    int n             = 0;
    ibv_device** list = api_.get_device_list(&n);
    std::string tried;
    status st = ok_;
    if (list == nullptr || n == 0) {
        if (list != nullptr) {
            api_.free_device_list(list);
        }
        return not_supported("verbs: no RDMA device (ibv_get_device_list found none)");
    }
    for (int i = 0; i < n && ctx_ == nullptr; ++i) {
        std::string name = api_.get_device_name(list[i]);
        tried += (tried.empty() ? "" : ", ") + name;
        if (!settings_.device.empty() && name != settings_.device) {
            continue;
        }
        ibv_context* ctx = api_.open_device(list[i]);
        if (ctx == nullptr) {
            st = system_error("verbs: cannot open device " + name + ": " + std::strerror(errno));
            continue;
        }
        ibv_port_attr attr{};
        if (api_.query_port(ctx, settings_.port, &attr) != 0) {
            st = system_error("verbs: device " + name + " has no port " +
                              std::to_string(settings_.port));
            api_.close_device(ctx);
            continue;
        }
        if (attr.state != IBV_PORT_ACTIVE) {
            st = system_error("verbs: port " + std::to_string(settings_.port) + " of device " +
                              name + " is not active");
            api_.close_device(ctx);
            continue;
        }
        port_.port      = settings_.port;
        port_.lid       = attr.lid;
        port_.mtu       = attr.active_mtu;
        port_.gid_index = settings_.gid_index;
        if (port_.gid_index < 0 && port_is_ethernet(attr)) {
            port_.gid_index = 0;  // RoCE has no LIDs
        }
        if (port_.gid_index >= 0 &&
            api_.query_gid(ctx, port_.port, port_.gid_index, &port_.gid) != 0) {
            st = system_error("verbs: device " + name + " port " + std::to_string(port_.port) +
                              " has no GID index " + std::to_string(port_.gid_index));
            api_.close_device(ctx);
            continue;
        }
        ctx_         = ctx;
        device_name_ = name;
    }
    api_.free_device_list(list);
    if (ctx_ != nullptr) {
        return ok_;
    }
    if (!settings_.device.empty() && st.is_ok()) {
        return invalid_argument("verbs: LOOM_VERBS_DEVICE=" + settings_.device +
                                " is not a device here (found: " + tried + ")");
    }
    return st;
}

// One completion queue for sends and receives; the eager rings, registered once.
status verbs_endpoint::create_rings() {
    pd_ = api_.alloc_pd(ctx_);
    if (pd_ == nullptr) {
        return system_error("verbs: ibv_alloc_pd on " + device_name_ + " failed");
    }
    size_t peers   = peer_ranks_.size();
    size_t recvs   = peers * settings_.recv_depth;
    size_t sends   = peers * 2 * settings_.send_queue;
    int cq_entries = int(recvs + sends + 2 * settings_.send_queue * peers + 16);
    // An idle caller sleeps on completion events (verbs_wait.cc); without a channel it naps.
    channel_ = api_.create_comp_channel(ctx_);
    if (channel_ != nullptr) {
        int flags = ::fcntl(channel_->fd, F_GETFL);
        ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK);  // events are read after poll(2)
    }
    cq_ = api_.create_cq(ctx_, cq_entries, nullptr, channel_, 0);
    if (cq_ == nullptr) {
        return system_error("verbs: ibv_create_cq of " + std::to_string(cq_entries) +
                            " entries on " + device_name_ + " failed");
    }
    buf_bytes_ = sizeof(wire_header) + settings_.eager_limit;
    recv_ring_ = std::make_unique<char[]>(std::max<size_t>(recvs, 1) * buf_bytes_);
    send_ring_ = std::make_unique<char[]>(std::max<size_t>(sends, 1) * buf_bytes_);
    recv_mr_ =
        api_.reg_mr(pd_, recv_ring_.get(), std::max<size_t>(recvs, 1) * buf_bytes_, access_flags);
    send_mr_ =
        api_.reg_mr(pd_, send_ring_.get(), std::max<size_t>(sends, 1) * buf_bytes_, access_flags);
    if (recv_mr_ == nullptr || send_mr_ == nullptr) {
        return system_error("verbs: registering the eager buffers on " + device_name_ +
                            " failed: " + std::strerror(errno));
    }
    backend_ = mr_backend{&api_, pd_};
    cache_.open(&backend_, settings_.mr_cache);
    return ok_;
}

result<ibv_mr*> verbs_endpoint::register_dmabuf(int fd, uint64_t offset, size_t len) {
    if (api_.reg_dmabuf_mr == nullptr) {
        return not_supported(
            "verbs: this libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or later has it)");
    }
    if (pd_ == nullptr) {
        return invalid_argument("verbs: register_dmabuf before connect()");
    }
    ibv_mr* mr = api_.reg_dmabuf_mr(pd_, offset, len, offset, fd, access_flags);
    if (mr == nullptr) {
        int e = errno;
        return status(e == EOPNOTSUPP || e == ENOSYS ? LOOM_ERR_NOT_SUPPORTED : LOOM_ERR_SYSTEM,
                      "verbs: ibv_reg_dmabuf_mr of fd " + std::to_string(fd) + " on " +
                          device_name_ + " failed: " + std::strerror(e));
    }
    return mr;
}

void verbs_endpoint::deregister(ibv_mr* mr) {
    if (mr != nullptr) {
        api_.dereg_mr(mr);
    }
}

}  // namespace loom::drivers::verbs
