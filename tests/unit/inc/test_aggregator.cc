// SPDX-License-Identifier: Apache-2.0
// inc/aggregator: contributions from every member in any order, with duplicates, give one
// multicast result equal to the reference; deterministic mode is bitwise the same for any
// arrival order; a lost result is resent to the member that asks again; slots are reused
// phase after phase and refuse phases out of order; admission keeps jobs within their
// quota; packets of unknown groups, members or slots are dropped and counted.
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "inc/aggregator/aggregator.hh"
#include "kernels/reduce.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;

namespace {

// A one-level group: every rank of the communicator contributes at this node.
group_config flat(uint64_t job, uint64_t comm, uint32_t members, uint32_t slots,
                  bool deterministic) {
    return {.job           = job,
            .comm          = comm,
            .members       = members,
            .expected      = members,
            .slots         = slots,
            .deterministic = deterministic};
}

struct sent {
    bool multicast;
    uint64_t job, comm, rank;
    header h;
    std::vector<uint8_t> payload;
};

// Parses every packet the aggregator sends: what goes out must itself be well formed.
struct capture_sink final : packet_sink {
    std::vector<sent> out;
    void take(bool multicast, uint64_t job, uint64_t comm, uint32_t rank, const uint8_t* p,
              size_t len) {
        sent s{multicast, job, comm, rank, {}, {}};
        const uint8_t* payload = nullptr;
        assert_int_equal(int(parse(p, len, &s.h, &payload)), int(parse_error::none));
        s.payload.assign(payload, payload + payload_bytes(s.h));
        out.push_back(std::move(s));
    }
    void unicast(uint64_t job, uint64_t comm, uint32_t rank, const uint8_t* p,
                 size_t len) override {
        take(false, job, comm, rank, p, len);
    }
    void multicast(uint64_t job, uint64_t comm, const uint8_t* p, size_t len) override {
        take(true, job, comm, 0, p, len);
    }
};

header contribution(uint64_t job, uint64_t comm, uint32_t seq, uint32_t slot, uint64_t offset,
                    loom_dtype_t dtype, loom_op_t op, uint32_t count, uint32_t rank) {
    return {.kind        = packet_kind::contribute,
            .dtype       = dtype,
            .op          = op,
            .job         = job,
            .comm        = comm,
            .seq         = seq,
            .slot        = slot,
            .offset      = offset,
            .count       = count,
            .contributor = rank};
}

// Member r's chunk, chosen so that the order of a float sum shows: rank 0 holds 1e8 (where
// a float32 ulp is 8), the others about 3, which vanish one by one when added to 1e8 but
// not when added up first.
std::vector<float> chunk_of(uint32_t r, uint32_t count) {
    std::vector<float> v(count);
    for (uint32_t i = 0; i < count; ++i) {
        v[i] = r == 0 ? 1e8f : 3.0f + float(i % 13) * 1e-3f * float(r);
    }
    return v;
}

void all_members_any_order_with_duplicates(void**) {
    const uint32_t n = 9, count = 2048;
    for (loom_op_t op : {LOOM_SUM, LOOM_MIN, LOOM_MAX}) {
        aggregator agg;
        assert_true(agg.admit(flat(1, 2, n, 4, false)).is_ok());
        capture_sink sink;
        std::vector<uint32_t> order;
        for (uint32_t r = 0; r < n; ++r) {
            order.push_back(r);
            order.push_back(r);  // every member sends twice (a retransmission)
        }
        std::mt19937 rng(op);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<int32_t> want(count, 0);
        for (uint32_t r = 0; r < n; ++r) {
            for (uint32_t i = 0; i < count; ++i) {
                auto v  = int32_t(r * 1000 + i) - 4000;
                want[i] = r == 0           ? v
                          : op == LOOM_SUM ? want[i] + v
                          : op == LOOM_MIN ? std::min(want[i], v)
                                           : std::max(want[i], v);
            }
        }
        for (uint32_t r : order) {
            std::vector<int32_t> mine(count);
            for (uint32_t i = 0; i < count; ++i) {
                mine[i] = int32_t(r * 1000 + i) - 4000;
            }
            agg.on_packet(contribution(1, 2, 10, 3, 0, LOOM_INT32, op, count, r),
                          reinterpret_cast<const uint8_t*>(mine.data()), sink);
        }
        size_t multicasts = size_t(std::count_if(sink.out.begin(), sink.out.end(),
                                                 [](const sent& s) { return s.multicast; }));
        assert_int_equal(multicasts, 1);
        const sent& m = *std::find_if(sink.out.begin(), sink.out.end(),
                                      [](const sent& s) { return s.multicast; });
        assert_int_equal(int(m.h.kind), int(packet_kind::result));
        assert_int_equal(m.h.seq, 10);
        assert_int_equal(m.h.slot, 3);
        assert_memory_equal(m.payload.data(), want.data(), count * sizeof(int32_t));
        assert_int_equal(agg.stats().contributions, n);
        assert_int_equal(agg.stats().duplicates, n);
        // Duplicates after completion are answered with the result, to that member alone.
        assert_int_equal(agg.stats().resent, sink.out.size() - 1);
        for (const sent& s : sink.out) {
            if (!s.multicast) {
                assert_memory_equal(s.payload.data(), want.data(), count * sizeof(int32_t));
            }
        }
    }
}

std::vector<uint8_t> deterministic_sum(const std::vector<uint32_t>& order, bool deterministic) {
    const uint32_t n = 8, count = 1000;
    aggregator agg;
    assert_true(agg.admit(flat(5, 1, n, 1, deterministic)).is_ok());
    capture_sink sink;
    for (uint32_t r : order) {
        auto v = chunk_of(r, count);
        agg.on_packet(contribution(5, 1, 1, 0, 0, LOOM_FLOAT32, LOOM_SUM, count, r),
                      reinterpret_cast<const uint8_t*>(v.data()), sink);
    }
    assert_int_equal(sink.out.size(), 1);
    return sink.out[0].payload;
}

void deterministic_float_sums_are_bitwise_reproducible(void**) {
    std::vector<uint32_t> forward = {0, 1, 2, 3, 4, 5, 6, 7}, backward = {7, 6, 5, 4, 3, 2, 1, 0},
                          mixed = {3, 7, 0, 5, 1, 6, 2, 4};
    auto a                      = deterministic_sum(forward, true);
    auto b                      = deterministic_sum(backward, true);
    auto c                      = deterministic_sum(mixed, true);
    assert_memory_equal(a.data(), b.data(), a.size());
    assert_memory_equal(a.data(), c.data(), a.size());
    // And it is the rank-order sum, computed here with the same kernel.
    std::vector<float> want = chunk_of(0, 1000);
    auto add                = kernels::reduce_kernel(LOOM_FLOAT32, LOOM_SUM);
    for (uint32_t r = 1; r < 8; ++r) {
        auto v = chunk_of(r, 1000);
        add(want.data(), want.data(), v.data(), 1000);
    }
    assert_memory_equal(a.data(), want.data(), a.size());
    // Arrival order does change a plain float sum here (which is why the mode exists).
    auto plain_forward  = deterministic_sum(forward, false);
    auto plain_backward = deterministic_sum(backward, false);
    assert_memory_not_equal(plain_forward.data(), plain_backward.data(), plain_forward.size());
}

void slots_are_reused_phase_after_phase(void**) {
    const uint32_t n = 3, count = 4;
    aggregator agg;
    assert_true(agg.admit(flat(1, 1, n, 2, false)).is_ok());
    capture_sink sink;
    std::vector<int64_t> one(count, 1);
    auto send = [&](uint32_t seq, uint64_t offset, uint32_t r) {
        agg.on_packet(contribution(1, 1, seq, 1, offset, LOOM_INT64, LOOM_SUM, count, r),
                      reinterpret_cast<const uint8_t*>(one.data()), sink);
    };
    // Phase (seq 1, offset 0) completes.
    for (uint32_t r = 0; r < n; ++r) {
        send(1, 0, r);
    }
    assert_int_equal(agg.stats().results, 1);
    // Phase (1, 8) on the same slot: rank 0 starts it; rank 2 lost result (1, 0) and asks
    // again: the kept entry answers it.
    send(1, 8, 0);
    send(1, 0, 2);
    assert_int_equal(agg.stats().resent, 1);
    assert_int_equal(sink.out.back().rank, 2);
    assert_true(sink.out.back().h.offset == 0);
    // A third phase before the second completes: refused (a client cannot be there yet).
    send(1, 16, 1);
    assert_int_equal(agg.stats().stale, 1);
    send(1, 8, 1);
    send(1, 8, 2);
    assert_int_equal(agg.stats().results, 2);
    // Now (1, 16) starts and replaces (1, 0): a late (1, 0) is stale, not reopened.
    send(1, 16, 1);
    send(1, 0, 1);
    assert_int_equal(agg.stats().stale, 2);
    std::vector<int64_t> three(count, 3);
    assert_memory_equal(sink.out.back().payload.data(), three.data(), count * sizeof(int64_t));
    // Acks of the completed phase are counted once per member.
    header ack = contribution(1, 1, 1, 1, 8, LOOM_INT64, LOOM_SUM, 0, 0);
    ack.kind   = packet_kind::ack;
    agg.on_packet(ack, nullptr, sink);
    agg.on_packet(ack, nullptr, sink);
    assert_int_equal(agg.stats().acks, 1);
}

void admission_quotas_and_groups_apart(void**) {
    aggregator_config c;
    c.total_slots = 10;
    c.job_quota   = 6;
    aggregator agg(c);
    assert_true(agg.admit(flat(1, 1, 4, 4, false)).is_ok());
    assert_false(agg.admit(flat(1, 1, 4, 1, false)).is_ok());  // admitted twice
    status over = agg.admit(flat(1, 2, 4, 3, false));          // job 1 would hold 7 > 6
    assert_int_equal(over.code(), LOOM_ERR_NO_RESOURCE);
    assert_true(agg.admit(flat(2, 1, 2, 5, false)).is_ok());  // another job: its own quota
    assert_int_equal(agg.admit(flat(3, 1, 2, 2, false)).code(),
                     LOOM_ERR_NO_RESOURCE);                    // pool: 9 + 2
    assert_false(agg.admit(flat(3, 1, 0, 1, false)).is_ok());  // no members
    agg.release(2, 1);
    assert_true(agg.admit(flat(3, 1, 2, 2, false)).is_ok());
    assert_int_equal(agg.slots_in_use(), 6);

    // Two groups on one node, same slot and seq: each gets its own result.
    capture_sink sink;
    std::vector<int32_t> a(2, 10), b(2, 100);
    for (uint32_t r = 0; r < 2; ++r) {
        agg.on_packet(contribution(3, 1, 1, 0, 0, LOOM_INT32, LOOM_SUM, 2, r),
                      reinterpret_cast<const uint8_t*>(b.data()), sink);
    }
    for (uint32_t r = 0; r < 4; ++r) {
        agg.on_packet(contribution(1, 1, 1, 0, 0, LOOM_INT32, LOOM_SUM, 2, r),
                      reinterpret_cast<const uint8_t*>(a.data()), sink);
    }
    assert_int_equal(sink.out.size(), 2);
    assert_int_equal(sink.out[0].job, 3);
    assert_int_equal(reinterpret_cast<const int32_t*>(sink.out[0].payload.data())[0], 200);
    assert_int_equal(sink.out[1].job, 1);
    assert_int_equal(reinterpret_cast<const int32_t*>(sink.out[1].payload.data())[0], 40);
}

void strangers_are_dropped_and_counted(void**) {
    aggregator agg;
    assert_true(agg.admit(flat(1, 1, 4, 2, false)).is_ok());
    capture_sink sink;
    std::vector<int32_t> v(2, 1);
    auto p = reinterpret_cast<const uint8_t*>(v.data());
    agg.on_packet(contribution(9, 1, 1, 0, 0, LOOM_INT32, LOOM_SUM, 2, 0), p, sink);
    agg.on_packet(contribution(1, 1, 1, 0, 0, LOOM_INT32, LOOM_SUM, 2, 4), p, sink);
    agg.on_packet(contribution(1, 1, 1, 2, 0, LOOM_INT32, LOOM_SUM, 2, 0), p, sink);
    agg.on_packet(contribution(1, 1, 1, 0, 0, LOOM_INT32, LOOM_SUM, 2, 0), p, sink);
    agg.on_packet(contribution(1, 1, 1, 0, 0, LOOM_INT32, LOOM_MAX, 2, 1), p, sink);
    assert_int_equal(agg.stats().unknown_group, 1);
    assert_int_equal(agg.stats().bad_member, 1);
    assert_int_equal(agg.stats().bad_slot, 1);
    assert_int_equal(agg.stats().mismatched, 1);
    assert_int_equal(agg.stats().contributions, 1);
    assert_true(sink.out.empty());
}

// A two-level tree in one process: ranks 0,1 at leaf 0, ranks 2,3 at leaf 1, both leaves
// children of one parent. Every packet goes through a queue, so tests can drop any of them.
struct tree {
    static constexpr uint32_t ranks = 4, count = 16;
    struct msg {
        int node;       // 0, 1: a leaf; 2: the parent; -1: a rank
        uint32_t rank;  // node -1: which one
        std::vector<uint8_t> bytes;
    };
    struct node_sink final : packet_sink {
        tree* t;
        int self;
        void unicast(uint64_t, uint64_t, uint32_t to, const uint8_t* p, size_t len) override {
            // A leaf's members are comm ranks; the parent's are the leaves.
            t->push(self == 2 ? int(to) : -1, to, p, len);
        }
        void multicast(uint64_t, uint64_t, const uint8_t* p, size_t len) override {
            if (self == 2) {
                t->push(0, 0, p, len);
                t->push(1, 0, p, len);
                return;
            }
            for (uint32_t r = 0; r < 2; ++r) {
                t->push(-1, uint32_t(self) * 2 + r, p, len);
            }
        }
        void upstream(uint64_t, uint64_t, const uint8_t* p, size_t len) override {
            t->push(2, 0, p, len);
        }
    };
    aggregator nodes[3];
    node_sink sinks[3];
    std::vector<msg> queue;
    size_t sent = 0;
    std::vector<size_t> drop;  // indices (in send order) of packets lost
    std::vector<std::vector<uint8_t>> got = std::vector<std::vector<uint8_t>>(ranks);
    std::vector<bool> done                = std::vector<bool>(ranks, false);

    explicit tree(bool deterministic) {
        for (int n = 0; n < 3; ++n) {
            sinks[n].t    = this;
            sinks[n].self = n;
            group_config c;
            c.job = 7, c.comm = 3, c.slots = 2, c.deterministic = deterministic;
            c.members           = n == 2 ? 2 : ranks;
            c.expected          = 2;
            c.upstream          = n != 2;
            c.up_index          = uint32_t(n);
            c.members_are_nodes = n == 2;
            assert_true(nodes[n].admit(c).is_ok());
        }
    }
    void push(int node, uint32_t rank, const uint8_t* p, size_t len) {
        if (std::find(drop.begin(), drop.end(), sent++) == drop.end()) {
            queue.push_back(msg{node, rank, std::vector<uint8_t>(p, p + len)});
        }
    }
    void deliver() {
        while (!queue.empty()) {
            msg m = std::move(queue.front());
            queue.erase(queue.begin());
            header h;
            const uint8_t* payload = nullptr;
            assert_int_equal(int(parse(m.bytes.data(), m.bytes.size(), &h, &payload)),
                             int(parse_error::none));
            if (m.node >= 0) {
                nodes[m.node].on_packet(h, payload, sinks[m.node]);
                continue;
            }
            assert_int_equal(int(h.kind), int(packet_kind::result));
            if (!done[m.rank]) {
                done[m.rank] = true;
                got[m.rank].assign(payload, payload + payload_bytes(h));
            }
        }
    }
    // Every rank without a result (re)sends its contribution, until all have one.
    void run(uint16_t shape, uint16_t root) {
        for (int round = 0; round < 10; ++round) {
            for (uint32_t r = 0; r < ranks; ++r) {
                if (done[r]) {
                    continue;
                }
                std::vector<int32_t> v(count);
                for (uint32_t i = 0; i < count; ++i) {
                    v[i] = int32_t(r * 100 + i);
                }
                header h  = contribution(7, 3, 1, 1, 32, LOOM_INT32, LOOM_SUM, count, r);
                bool data = (shape & flag_from_root) == 0 || r == root;
                h.flags   = uint16_t(shape | (data ? 0 : flag_no_data) | (round ? flag_resend : 0));
                h.root    = root;
                nodes[r / 2].on_packet(h, data ? reinterpret_cast<uint8_t*>(v.data()) : nullptr,
                                       sinks[r / 2]);
            }
            deliver();
            if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) {
                return;
            }
        }
        fail_msg("the tree did not deliver every result");
    }
};

std::vector<int32_t> ints(const std::vector<uint8_t>& b) {
    std::vector<int32_t> v(b.size() / 4);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
}

void tree_all_reduce_reduce_broadcast(void**) {
    std::vector<int32_t> sum(tree::count), root_data(tree::count);
    for (uint32_t i = 0; i < tree::count; ++i) {
        sum[i]       = int32_t(600 + 4 * i);  // (0 + 100 + 200 + 300) + 4i
        root_data[i] = int32_t(100 + i);      // rank 1's
    }
    {
        tree t(true);
        t.run(0, 0);
        for (uint32_t r = 0; r < tree::ranks; ++r) {
            assert_true(ints(t.got[r]) == sum);
        }
        assert_int_equal(t.nodes[2].stats().results, 1);
        assert_int_equal(t.nodes[0].stats().forwarded, 1);
        assert_int_equal(t.nodes[0].stats().from_parent, 1);
        assert_int_equal(t.nodes[0].stats().awaiting_parent, 0);
    }
    {
        tree t(false);
        t.run(flag_to_root, 2);  // the root under leaf 1: leaf 0's ranks get notices
        for (uint32_t r = 0; r < tree::ranks; ++r) {
            assert_true(r == 2 ? ints(t.got[r]) == sum : t.got[r].empty());
        }
    }
    {
        tree t(false);
        t.run(flag_from_root, 1);  // leaf 1 sends no data up
        for (uint32_t r = 0; r < tree::ranks; ++r) {
            assert_true(ints(t.got[r]) == root_data);
        }
    }
}

void tree_recovers_lost_packets_by_duplicates(void**) {
    std::vector<int32_t> sum(tree::count);
    for (uint32_t i = 0; i < tree::count; ++i) {
        sum[i] = int32_t(600 + 4 * i);
    }
    // Send order of the first round: leaf 0 up (0), leaf 1 up (1), parent → leaf 0, 1
    // (2, 3), leaf 0 → ranks 0, 1 (4, 5), leaf 1 → ranks 2, 3 (6, 7).
    for (std::vector<size_t> lost :
         {std::vector<size_t>{0}, {1}, {2}, {3}, {4}, {7}, {2, 3}, {0, 6}, {1, 2, 5}}) {
        for (uint16_t shape : {uint16_t(0), uint16_t(flag_to_root), uint16_t(flag_from_root)}) {
            tree t(true);
            t.drop = lost;
            t.run(shape, 3);
            for (uint32_t r = 0; r < tree::ranks; ++r) {
                if (shape == 0 || (shape == flag_to_root && r == 3)) {
                    assert_true(ints(t.got[r]) == sum);
                } else if (shape == flag_from_root) {
                    assert_int_equal(ints(t.got[r])[5], 305);  // rank 3's data
                }
            }
            assert_int_equal(t.nodes[2].stats().results, 1);
            assert_int_equal(t.nodes[0].stats().awaiting_parent, 0);
            assert_int_equal(t.nodes[1].stats().awaiting_parent, 0);
        }
    }
}

void broadcast_data_from_one_contributor_only(void**) {
    aggregator agg;
    assert_true(agg.admit(flat(1, 1, 3, 1, false)).is_ok());
    capture_sink sink;
    std::vector<int32_t> v(2, 5);
    auto p   = reinterpret_cast<const uint8_t*>(v.data());
    header h = contribution(1, 1, 1, 0, 0, LOOM_INT32, LOOM_SUM, 2, 2);
    h.flags  = flag_from_root;
    h.root   = 0;  // a parent cannot know which child holds the root: data from anyone
    agg.on_packet(h, p, sink);
    h.contributor = 1;  // a second bringer of data
    agg.on_packet(h, p, sink);
    assert_int_equal(agg.stats().mismatched, 1);
    h.flags |= flag_no_data;
    agg.on_packet(h, nullptr, sink);
    h.contributor = 0;
    agg.on_packet(h, nullptr, sink);
    assert_int_equal(sink.out.size(), 1);
    assert_true(sink.out[0].multicast);
    assert_int_equal(reinterpret_cast<const int32_t*>(sink.out[0].payload.data())[1], 5);
}

}  // namespace

LOOM_TEST_MAIN("inc_aggregator", cmocka_unit_test(all_members_any_order_with_duplicates),
               cmocka_unit_test(deterministic_float_sums_are_bitwise_reproducible),
               cmocka_unit_test(slots_are_reused_phase_after_phase),
               cmocka_unit_test(admission_quotas_and_groups_apart),
               cmocka_unit_test(strangers_are_dropped_and_counted),
               cmocka_unit_test(tree_all_reduce_reduce_broadcast),
               cmocka_unit_test(tree_recovers_lost_packets_by_duplicates),
               cmocka_unit_test(broadcast_data_from_one_contributor_only))
