// SPDX-License-Identifier: Apache-2.0
// A simulated HCA behind the verbs driver's call table (drivers/verbs/verbs_api.hh), so the
// driver's protocol runs in one process without an RDMA device. Endpoints opened in one
// process share it: each open_device is one host (context index 0, 1, ... in the order
// opened), its queue pairs reach each other's by queue-pair number.
//
// What it checks, like a device would: queue-pair transitions and the attribute masks each
// requires; sends only from RTS; every scatter/gather entry against a live registration of
// the queue pair's protection domain (lkey) and every RDMA write against the target's (rkey,
// remote-write access, bounds). What it does: a SEND lands in the peer's oldest posted
// receive (none posted: it waits, as RNR retry would); an RDMA write with immediate is one
// memcpy into the registered target and consumes a posted receive that completes with the
// immediate; signaled requests complete on the send queue's CQ, and a CQ armed by
// req_notify_cq raises one event on its completion channel (an eventfd). An injected failure turns
// a host's next deliveries into error completions (the queue pair goes to ERR, the rest flush).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "drivers/verbs/verbs_api.hh"

namespace loom::test::mock_verbs {

/// One queue-pair transition the driver asked for.
struct transition {
    int host;
    uint32_t qpn;
    ibv_qp_state from;
    ibv_qp_state to;
    int mask;
    ibv_qp_attr attr;
};

/// One RDMA write the HCA executed.
struct write_record {
    uintptr_t src;
    uintptr_t dst;
    size_t len;
    uint32_t imm;
};

struct settings {
    int devices   = 1;      // 0: ibv_get_device_list finds none
    bool dmabuf   = true;   // the library has ibv_reg_dmabuf_mr
    bool ethernet = false;  // RoCE port (GIDs) rather than InfiniBand
    int fail_to   = -1;     // a transition to this state (an ibv_qp_state) fails
};

/// Resets the HCA (every object forgotten) with `s`, and returns the table to install.
const drivers::verbs::verbs_api& reset(const settings& s);
const drivers::verbs::verbs_api& reset();

/// Host `host`'s queue pairs fail their next deliveries with `st` (e.g. IBV_WC_RETRY_EXC_ERR).
void fail_host(int host, ibv_wc_status st);

// What happened so far.
std::vector<transition> transitions();
std::vector<write_record> writes();
uint64_t sends();                 // SENDs delivered
uint64_t user_registrations();    // ibv_reg_mr calls beyond each endpoint's two rings
uint64_t registrations();         // every ibv_reg_mr call
uint64_t dmabuf_registrations();  // ibv_reg_dmabuf_mr calls
size_t live_objects();            // queue pairs, CQs, PDs, contexts and MRs not yet destroyed

}  // namespace loom::test::mock_verbs
