// SPDX-License-Identifier: Apache-2.0
// The verbs calls the driver makes, as one table of function pointers. The real table
// (verbs_api.cc) forwards to libibverbs, wrapping what verbs.h defines inline or as macros
// (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq, ibv_query_port, ibv_reg_mr); a
// test installs a table of its own (a simulated HCA) before it opens endpoints, so the driver's
// protocol runs without an RDMA device.
//
// ibv_reg_dmabuf_mr is looked up when the table is built (rdma-core 34 and later have it):
// a null entry means this libibverbs cannot register dmabuf memory, and the driver says so
// instead of failing to load.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace loom::drivers::verbs {

struct verbs_api {
    ibv_device** (*get_device_list)(int* num_devices);
    void (*free_device_list)(ibv_device** list);
    const char* (*get_device_name)(ibv_device* device);
    ibv_context* (*open_device)(ibv_device* device);
    int (*close_device)(ibv_context* context);
    int (*query_port)(ibv_context* context, uint8_t port, ibv_port_attr* attr);
    int (*query_gid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
    ibv_pd* (*alloc_pd)(ibv_context* context);
    int (*dealloc_pd)(ibv_pd* pd);
    ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                         int comp_vector);
    int (*destroy_cq)(ibv_cq* cq);
    ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
    int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
    int (*destroy_qp)(ibv_qp* qp);
    ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access);
    /// Null when the library has no dmabuf registration.
    ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                             int access);
    int (*dereg_mr)(ibv_mr* mr);
    int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
    int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
    int (*poll_cq)(ibv_cq* cq, int max, ibv_wc* out);
    const char* (*wc_status_str)(ibv_wc_status status);
    // The idle waker: completion events through a channel's file descriptor.
    ibv_comp_channel* (*create_comp_channel)(ibv_context* context);
    int (*destroy_comp_channel)(ibv_comp_channel* channel);
    int (*req_notify_cq)(ibv_cq* cq, int solicited_only);
    int (*get_cq_event)(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context);
    void (*ack_cq_events)(ibv_cq* cq, unsigned int n);
};

/// The table libibverbs provides.
const verbs_api& real_verbs_api();
/// The table endpoints opened from now on use: the real one unless a test installed one.
const verbs_api& current_verbs_api();
/// Installs `api` for endpoints opened afterwards (null: the real table again). Tests only;
/// an endpoint keeps the table it was opened with.
void install_verbs_api(const verbs_api* api);

}  // namespace loom::drivers::verbs
