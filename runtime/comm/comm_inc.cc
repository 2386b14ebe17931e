// SPDX-License-Identifier: Apache-2.0
// In-network collectives on a communicator: where its aggregation node is, admission agreed
// by all ranks, and whether a call can run in the network (in_network_for: the constraint
// the in-network algorithms state, tuner::admits).
//
// Agreement: every rank asks its node for slots (inc_offload::open), then one all-reduce
// (minimum of 1 = admitted, 0 = not) over the software path tells everyone whether all
// were admitted. Only then do the in-network algorithms apply, so either every rank of the
// communicator can run them or none can: the tuner ranks the same candidates everywhere,
// an explicit `inc` fails alike on every rank, and the reason is logged on each rank.
#include <sched.h>

#include <algorithm>
#include <set>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "comm/comm.hh"
#include "inc/node/ticket.hh"
#include "topology/fabric.hh"

namespace loom::comm {
namespace {

// "sw0=tcp:…,sw1=shm:…" → address of `id`; empty when absent.
std::string address_of(const std::string& spec, const std::string& id) {
    size_t at = 0;
    while (at <= spec.size()) {
        size_t end       = spec.find(',', at);
        std::string item = spec.substr(at, end == std::string::npos ? std::string::npos : end - at);
        size_t eq        = item.find('=');
        if (eq != std::string::npos && item.substr(0, eq) == id) {
            return item.substr(eq + 1);
        }
        if (end == std::string::npos) {
            break;
        }
        at = end + 1;
    }
    return "";
}

// The in-network switch a rank's endpoint is linked to.
int leaf_of(const topology::fabric& f, int rank) {
    int node = f.node_of_rank(rank);
    for (int l : f.links_of(node)) {
        const topology::link& k = f.links()[l];
        int other               = k.a == node ? k.b : k.a;
        if (f.nodes()[other].in_network) {
            return other;
        }
    }
    return -1;
}

// The tree case: this rank's leaf, how many ranks share it, and the leaves under the root.
status plan_tree(const settings& s, inc_plan* p) {
    if (s.comm_id != 0) {
        return not_supported(
            "aggregation trees serve the world communicator only; split "
            "communicators need a single node (LOOM_SWITCH=ADDR)");
    }
    LOOM_ASSIGN(auto f, topology::load_fabric_file(s.switch_fabric));
    if (f.nranks() != s.size) {
        return invalid_argument("LOOM_SWITCH_FABRIC " + s.switch_fabric + " has " +
                                std::to_string(f.nranks()) + " ranks, the communicator " +
                                std::to_string(s.size));
    }
    std::vector<int> leaf(static_cast<size_t>(s.size));
    std::set<int> leaves;
    for (int r = 0; r < s.size; ++r) {
        leaf[r] = leaf_of(f, r);
        if (leaf[r] < 0) {
            return invalid_argument("rank " + std::to_string(r) +
                                    " is linked to no in-network switch in " + s.switch_fabric);
        }
        leaves.insert(leaf[r]);
    }
    const int mine = leaf[s.rank];
    p->expected    = uint32_t(std::count(leaf.begin(), leaf.end(), mine));
    if (leaves.size() > 1) {
        int parent = f.nodes()[mine].parent;
        for (int l : leaves) {
            if (f.nodes()[l].parent != parent || parent < 0) {
                return invalid_argument("the leaves of " + s.switch_fabric +
                                        " need one common parent (two levels at most)");
            }
        }
        p->parent_members = uint32_t(leaves.size());
        p->parent_index   = uint32_t(std::distance(leaves.begin(), leaves.find(mine)));
    }
    const std::string& id = f.nodes()[mine].id;
    p->address            = address_of(s.switch_address, id);
    if (p->address.empty()) {
        return invalid_argument("LOOM_SWITCH names no address for switch '" + id + "'");
    }
    return status::ok();
}

bool carried(loom_dtype_t dtype, loom_op_t op) {
    return inc::element_bytes(dtype) != 0 &&
           (op == LOOM_SUM || op == LOOM_MIN || op == LOOM_MAX || op == LOOM_AVG);
}

}  // namespace

void communicator::open_in_network() {
    const settings& s = settings_;
    if (s.switch_address.empty()) {
        return;
    }
    inc_plan p;
    // The quota is the world's job's, whole name; a split's own name (its job) tells its
    // communicator apart.
    p.job  = inc::job_id_of(s.world_job);
    p.comm = inc::job_id_of(s.job) ^ s.comm_id;
    if (std::string job; !s.inc_ticket.empty()) {
        // The ticket names the node's job (its proof and its quota); the communicator id
        // stays this job's own, so jobs sharing a ticket never share a group.
        inc::parse_ticket(s.inc_ticket, &job, &p.ticket);  // checked in resolve_settings
        p.job = inc::job_id_of(job);
    }
    p.members       = uint32_t(s.size);
    p.expected      = uint32_t(s.size);
    p.slots         = uint32_t(s.inc_slots);
    p.deterministic = s.inc_deterministic;
    p.timeout_s     = std::min(s.timeout_s, 10.0);
    p.address       = s.switch_address;
    p.drop          = s.inc_drop;
    p.dup           = s.inc_dup;
    p.reorder       = s.inc_reorder;
    if (!s.switch_fabric.empty()) {
        if (status st = plan_tree(s, &p); !st) {
            inc_reason_ = st.message();
            return;
        }
    }
    auto o = inc_offload::open(p, rank());
    if (!o) {
        inc_reason_ = o.error().message();
        return;
    }
    inc_ = std::move(o).value();
}

status communicator::agree_in_network() {
    if (settings_.switch_address.empty()) {
        return status::ok();
    }
    LOOM_ASSIGN(inc_ready_, all_ranks_agree(inc_ != nullptr, "in-network admission"));
    if (inc_ready_) {
        LOOM_LOG_INFO(log::subsystem::inc, "rank %d: in-network collectives through %s (%d slots)",
                      rank(), inc_->address().c_str(), settings_.inc_slots);
        return status::ok();
    }
    if (inc_reason_.empty()) {
        inc_reason_ = "another rank was not admitted by its aggregation node";
    }
    if (inc_) {
        inc_->retire();  // give the slots back: nobody will use them
    }
    LOOM_LOG_WARN(log::subsystem::inc,
                  "rank %d: in-network collectives off, software algorithms instead: %s", rank(),
                  inc_reason_.c_str());
    return status::ok();
}

// A peer failure on a communicator with a node: the node's death reaches every rank (its
// link closes) but another rank's failure notice may come first and name only that rank.
// Before the error is recorded, give the link a moment (progress included) to tell whether
// the node is gone; if it is, the message names it. Costs nothing on success.
engine::failure communicator::naming_failed_node(const engine::failure& f) {
    if (f.code != LOOM_ERR_PEER_FAILURE || !inc_ready_ || !inc_) {
        return f;
    }
    constexpr double grace_s = 0.2;
    for (deadline until(grace_s); !inc_->node_gone() && !until.expired();) {
        if (settings_.progress == engine::progress_mode::caller) {
            engine_->progress();
        } else {
            sched_yield();
        }
    }
    engine::failure named  = f;
    const std::string node = "aggregation node " + inc_->address();
    if (inc_->node_gone() && f.message.find(node) == std::string::npos) {
        named.message += " (the " + node + " is gone: its connection closed)";
    }
    return named;
}

tuner::in_network_state communicator::in_network_for(const algorithms::call& c, loom_dtype_t dtype,
                                                     loom_op_t op) const {
    const bool inc_call = c.coll == schedule::collective::allreduce ||
                          c.coll == schedule::collective::reduce ||
                          c.coll == schedule::collective::broadcast;
    tuner::in_network_state st;
    st.usable = inc_ready_ && inc_call && carried(dtype, op);
    if (!inc_ready_) {
        st.why_not = inc_reason_.empty() ? "no aggregation node (LOOM_SWITCH unset)" : inc_reason_;
    } else if (!st.usable) {
        st.why_not = "the aggregation node does not reduce this dtype/op";
    }
    // The node's flat segment (comm_flat.cc): the same three primitives and all-gather and
    // all-to-all, up to its slot size (flat_fits: a writer's whole part of the call).
    const bool flat_call = inc_call || c.coll == schedule::collective::allgather ||
                           c.coll == schedule::collective::alltoall;
    const double bytes = double(c.count) * double(c.dtype_size);
    st.flat_usable =
        flat_ready_ && flat_call && flat_carries(c.coll, dtype, op) &&
        flat_fits(c.coll, c.nranks, c.count, c.dtype_size, size_t(settings_.flat_max_bytes));
    if (!flat_ready_) {
        st.flat_why_not = flat_reason_.empty() ? "no flat segment" : flat_reason_;
    } else if (!st.flat_usable) {
        st.flat_why_not =
            "the call (" + std::to_string(int64_t(bytes)) + " bytes of count; a writer's part: " +
            "the vector, all-gather's block, all-to-all's N blocks in 4-byte words) is over " +
            "LOOM_FLAT_MAX_BYTES=" + std::to_string(settings_.flat_max_bytes) +
            ", or the primitive or its dtype/op is not one the flat segment serves";
    }
    return st;
}

}  // namespace loom::comm
