// SPDX-License-Identifier: Apache-2.0
// loom-dpu's router (router.hh).
#include "router.hh"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>
#include <unistd.h>

#include <algorithm>

#include "base/byte_order.hh"
#include "drivers/dpdk/dpdk_frame.hh"
#include "drivers/reliable/reliable_wire.hh"
#include "routing/routing_params.hh"
#include "rx_wait.hh"

namespace loom::dpu {
namespace {

namespace dpdk = drivers::dpdk;
namespace wire = drivers::reliable;

constexpr size_t eth = dpdk::eth_header;

// Idle policy (shared cores) where the ports have no rx interrupt: this many empty polls
// spin, then each empty poll sleeps sleep_us. No sched_yield phase: a yielding DPU stays
// runnable, and 8 of them beside 8 yielding ranks on 2 cores made each hop wait for the
// others' turns (8-byte all-reduce through a 2x2x2 torus: 5-20 ms with 2048 yields before
// sleeping, 1.1-2 ms without; docs/tools/loom-dpu.md#idle-policy).
constexpr uint32_t spin_polls = 256;
constexpr useconds_t sleep_us = 20;
// After this long without a frame, the fallback sleeps deep_sleep_us per poll: an idle DPU
// then costs about 1 % of a core instead of 10 % (tests/tools/test_dpu_idle.sh), and only
// the first frame after a quiet spell waits the longer sleep.
constexpr double deep_after_s      = 0.05;
constexpr useconds_t deep_sleep_us = 1000;
// On rx interrupts instead (rx_wait.hh), the longest sleep: 1 ms while a port still says
// hello (every millisecond), else 10 ms (nothing else here is timed; signals end it).
constexpr int hello_wait_ms = 1;
constexpr int wait_ms       = 10;

routing::tie_rule ties_from_params() {
    routing::tie_rule t = routing::tie_rule::toward_plus;
    routing::parse_tie_rule(routing::params::route_ties.get(), &t);
    return t;
}

}  // namespace

router::router(const options& o, const topology::shape& s, std::vector<dpu_port>& ports)
    : o_(o), shape_(s), ports_(ports), stats_(ports.size()) {
    routing::tie_rule ties = ties_from_params();
    table_      = routing::route_table::build(s, o.node, ties, routing::vc_policy::dateline);
    nranks_     = s.size() * o.ranks_per_node;
    first_host_ = 2 * s.ndims();
    neighbour_next_.resize(ports.size());
    for (size_t i = 0; i < ports.size(); ++i) {
        if (ports[i].neighbour >= 0) {
            auto t = routing::route_table::build(s, ports[i].neighbour, ties,
                                                 routing::vc_policy::dateline);
            for (int d = 0; d < s.size(); ++d) {
                neighbour_next_[i].push_back(t.to(d).next);
            }
        }
    }
    queues_.resize(ports.size() * max_vcs);
    for (queue& q : queues_) {
        q.slots.assign(size_t(o.queue_slots), nullptr);
        q.mask = uint32_t(o.queue_slots - 1);
    }
    inputs_.resize(ports.size());
    heard_.assign(ports.size(), false);
    rr_vc_.assign(ports.size(), 0);
    hello_every_ = rte_get_tsc_hz() / 1000;
}

router::~router() {
    for (queue& q : queues_) {
        while (q.size() > 0) {
            rte_pktmbuf_free(q.slots[q.head++ & q.mask]);
        }
    }
    for (input& in : inputs_) {
        for (uint16_t i = in.pos; i < in.count; ++i) {
            rte_pktmbuf_free(in.rx[i]);
        }
    }
}

router::verdict router::route(int in, rte_mbuf* m) {
    verdict v;
    auto drop = [&](int cause) {
        v.out   = -1;
        v.cause = cause;
        return v;
    };
    if (m->nb_segs > 1) {
        return drop(drop_too_long);
    }
    if (m->data_len < eth) {
        return drop(drop_runt);
    }
    const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
    uint16_t type = be::get16(p + 12);
    if (type == dpdk::loom_control_ethertype) {
        v.out = -2;  // the link's hello: heard, nothing to forward
        return v;
    }
    if (type != dpdk::loom_ethertype) {
        return drop(drop_bad_type);
    }
    const uint8_t* h = p + eth;
    if (m->data_len < eth + wire::header_bytes) {
        return drop(drop_truncated);
    }
    if (be::get16(h) != wire::wire_magic || h[2] != wire::wire_version || h[3] == 0 ||
        h[3] > wire::max_kind) {
        return drop(drop_bad_header);
    }
    if (m->data_len != eth + wire::header_bytes + be::get16(h + 6)) {
        return drop(drop_truncated);
    }
    uint32_t src = be::get32(h + 8), dst = be::get32(h + 12);
    if (dst >= uint32_t(nranks_)) {
        return drop(drop_unknown_dst);
    }
    if (src >= uint32_t(nranks_)) {
        return drop(drop_forged);
    }
    int src_node = int(src) / o_.ranks_per_node, dst_node = int(dst) / o_.ranks_per_node;
    const dpu_port& from = ports_[size_t(in)];
    int in_dim = -1, in_vc = 0;
    if (from.host) {
        if (int(src) != from.rank) {
            return drop(drop_forged);  // a rank injects its own frames only
        }
    } else {
        // From a neighbour: another node's frame that the neighbour routes to this node.
        if (src_node == o_.node || neighbour_next_[size_t(in)][size_t(dst_node)] != o_.node) {
            return drop(drop_forged);
        }
        in_dim = from.dim;
        in_vc  = h[wire::vc_field] < max_vcs ? h[wire::vc_field] : 0;
    }
    if (dst_node == o_.node) {
        v.out = first_host_ + int(dst) - o_.node * o_.ranks_per_node;
        v.vc  = 0;
        return v;
    }
    const routing::route_entry& e = table_.to(dst_node);
    v.out                         = e.port;
    v.vc                          = routing::out_vc(e.vc, in_dim, in_vc, e.dim);
    return v;
}

bool router::poll_input(int in) {
    input& st = inputs_[size_t(in)];
    if (st.pos == st.count) {
        st.pos   = 0;
        st.count = rte_eth_rx_burst(ports_[size_t(in)].id, 0, st.rx, 32);
        if (st.count == 0) {
            return false;
        }
        heard_[size_t(in)] = true;
        for (uint16_t i = 0; i < st.count && i < 4; ++i) {
            rte_prefetch0(rte_pktmbuf_mtod(st.rx[i], void*));
        }
    }
    port_stats& s = stats_[size_t(in)];
    bool moved    = false;
    while (st.pos < st.count) {
        rte_mbuf* m = st.rx[st.pos];
        if (st.pos + 4 < st.count) {
            rte_prefetch0(rte_pktmbuf_mtod(st.rx[st.pos + 4], void*));
        }
        verdict v = route(in, m);
        if (v.out == -2) {
            ++s.control_in;
            rte_pktmbuf_free(m);
            ++st.pos;
            continue;
        }
        if (v.out < 0 || ports_[size_t(v.out)].dev == nullptr) {
            ++s.drops[v.out < 0 ? v.cause : drop_unknown_dst];
            rte_pktmbuf_free(m);
            ++st.pos;
            moved = true;
            continue;
        }
        queue& q = queues_[size_t(v.out) * max_vcs + size_t(v.vc)];
        if (q.size() == q.slots.size()) {
            // Hold the input: the rest of the burst waits, the rx ring fills behind it.
            s.held += st.held ? 0 : 1;
            st.held = true;
            break;
        }
        st.held                                             = false;
        rte_pktmbuf_mtod(m, uint8_t*)[eth + wire::vc_field] = uint8_t(v.vc);
        ++s.frames_in;
        s.bytes_in += m->data_len;
        q.slots[q.tail++ & q.mask] = m;
        port_stats& o              = stats_[size_t(v.out)];
        o.high_water[v.vc]         = std::max<uint64_t>(o.high_water[v.vc], q.size());
        ++st.pos;
        moved = true;
    }
    return moved;
}

bool router::drain_output(int out) {
    if (!heard_[size_t(out)]) {
        return false;  // its peer has not posted receive buffers yet: hold, never drop
    }
    bool moved = false;
    for (int k = 0; k < max_vcs; ++k) {
        int vc   = (rr_vc_[size_t(out)] + k) % max_vcs;
        queue& q = queues_[size_t(out) * max_vcs + size_t(vc)];
        if (q.size() == 0) {
            continue;
        }
        rte_mbuf* burst[32];
        uint16_t n = uint16_t(std::min<uint32_t>(q.size(), 32));
        uint64_t bytes[32];
        for (uint16_t i = 0; i < n; ++i) {
            burst[i] = q.slots[(q.head + i) & q.mask];
            bytes[i] = burst[i]->data_len;
        }
        uint16_t sent = rte_eth_tx_burst(ports_[size_t(out)].id, 0, burst, n);
        q.head += sent;
        port_stats& s = stats_[size_t(out)];
        s.frames_out[vc] += sent;
        for (uint16_t i = 0; i < sent; ++i) {
            s.bytes_out[vc] += bytes[i];
        }
        moved = moved || sent > 0;
    }
    rr_vc_[size_t(out)] = (rr_vc_[size_t(out)] + 1) % max_vcs;
    return moved;
}

void router::say_hello(uint64_t now) {
    if (now < next_hello_) {
        return;
    }
    next_hello_ = now + hello_every_;
    for (size_t i = 0; i < ports_.size(); ++i) {
        dpu_port& p = ports_[i];
        if (p.dev == nullptr || heard_[i]) {
            continue;
        }
        rte_mbuf* m = rte_pktmbuf_alloc(p.dev->pool());
        if (m == nullptr) {
            continue;
        }
        auto* at = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(eth)));
        rte_ether_addr all;
        memset(&all, 0xff, sizeof all);
        dpdk::write_eth_header(at, all, p.dev->mac(), dpdk::loom_control_ethertype);
        if (rte_eth_tx_burst(p.id, 0, &m, 1) != 1) {
            rte_pktmbuf_free(m);
        }
    }
}

void router::run(volatile std::sig_atomic_t* stop, volatile std::sig_atomic_t* dump) {
    uint32_t idle = 0;
    int n         = int(ports_.size());
    // Idle on rx interrupts where every port has one (rx_wait.hh), else yield and sleep.
    rx_wait waiter(ports_, o_.node, !o_.busy_poll);
    uint64_t quiet_since = 0, deep_after = uint64_t(deep_after_s * double(rte_get_tsc_hz()));
    auto pass = [&] {
        bool work = false;
        for (int i = 0; i < n; ++i) {
            if (ports_[size_t(i)].dev != nullptr) {
                work = poll_input(i) || work;
            }
        }
        for (int i = 0; i < n; ++i) {
            if (ports_[size_t(i)].dev != nullptr) {
                work = drain_output(i) || work;
            }
        }
        if (also_) {
            work = also_() || work;  // the aggregator on the same loop (also_poll)
        }
        return work;
    };
    while (*stop == 0) {
        if (pass()) {
            idle = 0;
            continue;
        }
        say_hello(rte_get_tsc_cycles());
        if (*dump != 0) {
            *dump = 0;
            print_stats(stderr, o_.node, ports_, stats_);
        }
        if (o_.busy_poll || ++idle < spin_polls) {
            rte_pause();
        } else if (waiter.usable() && !holding()) {
            // Arm, poll once more (a frame that came before arming is found here), then
            // sleep unless it found one: no lost wake-up. Bounded: hellos and signals.
            waiter.arm();
            bool work = pass();
            waiter.sleep(work ? 0 : all_heard() ? wait_ms : hello_wait_ms);
            idle = work ? 0 : idle;
        } else {
            uint64_t now = rte_get_tsc_cycles();
            if (idle == spin_polls) {
                quiet_since = now;
            }
            usleep(now - quiet_since > deep_after ? deep_sleep_us : sleep_us);
        }
    }
}

bool router::holding() const {
    for (const queue& q : queues_) {
        if (q.size() > 0) {
            return true;  // a full tx ring frees up without a frame coming in: keep polling
        }
    }
    for (const input& in : inputs_) {
        if (in.pos < in.count) {
            return true;
        }
    }
    return false;
}

bool router::all_heard() const {
    for (size_t i = 0; i < ports_.size(); ++i) {
        if (ports_[i].dev != nullptr && !heard_[i]) {
            return false;
        }
    }
    return true;
}

}  // namespace loom::dpu
