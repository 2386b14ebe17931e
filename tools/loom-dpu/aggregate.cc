// SPDX-License-Identifier: Apache-2.0
// loom-dpu --aggregate (aggregate.hh).
#include "aggregate.hh"

#include <sys/stat.h>

#include <algorithm>
#include <thread>

#include "base/clock.hh"
#include "base/params.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "inc/node/key_file.hh"

namespace loom::dpu {
namespace {

// The memif interfaces a listener opens (LOOM_DPDK_MEMIF_IDS, one mbuf pool each): the root
// needs one per leaf, a leaf one per link of its ranks.
status set_memif_ids(int n) {
    return params::registry::global().set("LOOM_DPDK_MEMIF_IDS", std::to_string(n));
}

std::string who(const options& o) {
    return "loom-dpu node " + std::to_string(o.node) + ": --aggregate: ";
}

}  // namespace

result<std::unique_ptr<aggregation>> aggregation::open(const options& o, int nodes) {
    if (status st = drivers::dpdk::ensure_eal(); !st.is_ok()) {
        return st;
    }
    auto key = inc::load_node_key(o.key_file, false);
    if (!key) {
        return status(key.error()).prefix(who(o));
    }
    inc::switch_config c;
    c.key       = *key;
    c.slots     = o.slots;
    c.job_quota = std::max<uint32_t>(1, o.slots / 2);
    c.drop      = o.drop;
    c.dup       = o.dup;
    std::unique_ptr<aggregation> a(new aggregation(o.node));
    if (o.node == 0) {
        if (status st = set_memif_ids(nodes); !st.is_ok()) {
            return st;
        }
        inc::switch_config r = c;
        r.listen             = root_address(o.dir);
        r.seed               = o.seed * 1000003 + 999;
        // The leaves' links belong to no group between collectives' jobs (and while ranks
        // start): the root keeps them rather than closing them as idle after 10 s.
        r.idle_timeout_s = 86400;
        auto root        = inc::switch_node::open(r);
        if (!root) {
            return status(root.error()).prefix(who(o) + "root at " + r.listen + ": ");
        }
        a->root_ = std::move(*root);
    } else {
        // Node 0's root listens before node 0 writes its ready file.
        std::string ready = ready_file(o.dir, 0);
        deadline until(o.link_timeout_s);
        struct stat st {};
        while (::stat(ready.c_str(), &st) != 0) {
            if (until.expired()) {
                return status(LOOM_ERR_TIMEOUT,
                              who(o) + "node 0 (the root) did not listen within " +
                                  std::to_string(o.link_timeout_s) + " s (no " + ready + ")");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    if (status st = set_memif_ids(o.agg_ids); !st.is_ok()) {
        return st;
    }
    inc::switch_config l = c;
    l.listen             = leaf_address(o.dir, o.node);
    // Node 0's leaf names id 0 (the root, in this process, cannot answer an id request
    // while this thread waits for it); the others are handed a free id by the root, so their
    // clients, knowing it listens, are never stopped mid-hand-shake (drivers/dpdk).
    l.parent            = root_address(o.dir) + (o.node == 0 ? ":0" : "");
    l.seed              = o.seed * 1000003 + uint64_t(o.node);
    l.await_parent      = false;
    l.connect_timeout_s = o.link_timeout_s;
    auto leaf           = inc::switch_node::open(l);
    if (!leaf) {
        return status(leaf.error()).prefix(who(o) + "leaf at " + l.listen + ": ");
    }
    a->leaf_ = std::move(*leaf);
    // The root's challenge on the leaf's parent link (node 0: our own root answers it here).
    deadline until(o.link_timeout_s);
    while (!a->leaf_->parent_ready()) {
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT, who(o) + "the root (" + root_address(o.dir) +
                                                ") sent no challenge within " +
                                                std::to_string(o.link_timeout_s) + " s");
        }
        if (!a->poll()) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    return a;
}

bool aggregation::poll() {
    bool work = false;
    if (root_) {
        work = root_->poll() || work;
    }
    return leaf_->poll() || work;
}

void aggregation::print(std::FILE* out) const {
    auto line = [&](const char* role, const inc::switch_node& n, const std::string& address) {
        const inc::switch_stats& s      = n.stats();
        const inc::aggregator_stats& ag = n.aggregation();
        uint64_t refusals               = s.forged + s.join_auth_refused + s.join_limit_refused +
                            s.links_refused + s.links_bad_closed + s.nacks;
        std::fprintf(out,
                     "dpu-agg node=%d role=%s address=%s slots_in_use=%u contributions=%llu "
                     "duplicates=%llu results=%llu forwarded=%llu from_parent=%llu resent=%llu "
                     "drops_injected=%llu dups_injected=%llu retransmissions=%llu joins=%llu "
                     "refusals=%llu links=%llu packets_in=%llu\n",
                     node_, role, address.c_str(), n.slots_in_use(),
                     (unsigned long long)ag.contributions, (unsigned long long)ag.duplicates,
                     (unsigned long long)ag.results, (unsigned long long)ag.forwarded,
                     (unsigned long long)ag.from_parent, (unsigned long long)ag.resent,
                     (unsigned long long)s.drops_injected, (unsigned long long)s.dups_injected,
                     (unsigned long long)s.retransmissions, (unsigned long long)s.joins,
                     (unsigned long long)refusals, (unsigned long long)s.links_accepted,
                     (unsigned long long)s.packets_in);
    };
    line("leaf", *leaf_, leaf_->address());
    if (root_) {
        line("root", *root_, root_->address());
    }
    std::fflush(out);
}

}  // namespace loom::dpu
