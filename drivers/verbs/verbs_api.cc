// SPDX-License-Identifier: Apache-2.0
// The real verbs table: libibverbs' functions, with its inline and macro entry points
// wrapped in functions so they have an address.
#include "drivers/verbs/verbs_api.hh"

#include <dlfcn.h>

#include <atomic>

namespace loom::drivers::verbs {
namespace {

int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
    return ibv_query_port(context, port, attr);
}
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return ibv_reg_mr(pd, addr, length, access);
}
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    return ibv_post_send(qp, wr, bad);
}
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    return ibv_post_recv(qp, wr, bad);
}
int poll_cq(ibv_cq* cq, int max, ibv_wc* out) {
    return ibv_poll_cq(cq, max, out);
}
int req_notify_cq(ibv_cq* cq, int solicited_only) {
    return ibv_req_notify_cq(cq, solicited_only);
}

using reg_dmabuf_fn = ibv_mr* (*)(ibv_pd*, uint64_t, size_t, uint64_t, int, int);

// Looked up by name, not linked: a libibverbs older than the headers loom was built with
// still loads, and the dmabuf path reports itself absent.
reg_dmabuf_fn find_reg_dmabuf() {
    return reinterpret_cast<reg_dmabuf_fn>(dlsym(RTLD_DEFAULT, "ibv_reg_dmabuf_mr"));
}

verbs_api make_real() {
    return verbs_api{
        .get_device_list      = ibv_get_device_list,
        .free_device_list     = ibv_free_device_list,
        .get_device_name      = ibv_get_device_name,
        .open_device          = ibv_open_device,
        .close_device         = ibv_close_device,
        .query_port           = query_port,
        .query_gid            = ibv_query_gid,
        .alloc_pd             = ibv_alloc_pd,
        .dealloc_pd           = ibv_dealloc_pd,
        .create_cq            = ibv_create_cq,
        .destroy_cq           = ibv_destroy_cq,
        .create_qp            = ibv_create_qp,
        .modify_qp            = ibv_modify_qp,
        .destroy_qp           = ibv_destroy_qp,
        .reg_mr               = reg_mr,
        .reg_dmabuf_mr        = find_reg_dmabuf(),
        .dereg_mr             = ibv_dereg_mr,
        .post_send            = post_send,
        .post_recv            = post_recv,
        .poll_cq              = poll_cq,
        .wc_status_str        = ibv_wc_status_str,
        .create_comp_channel  = ibv_create_comp_channel,
        .destroy_comp_channel = ibv_destroy_comp_channel,
        .req_notify_cq        = req_notify_cq,
        .get_cq_event         = ibv_get_cq_event,
        .ack_cq_events        = ibv_ack_cq_events,
    };
}

std::atomic<const verbs_api*> installed{nullptr};

}  // namespace

const verbs_api& real_verbs_api() {
    static const verbs_api api = make_real();
    return api;
}

const verbs_api& current_verbs_api() {
    const verbs_api* api = installed.load(std::memory_order_acquire);
    return api != nullptr ? *api : real_verbs_api();
}

void install_verbs_api(const verbs_api* api) {
    installed.store(api, std::memory_order_release);
}

}  // namespace loom::drivers::verbs
