// SPDX-License-Identifier: Apache-2.0
// The communicator's in-network offload (runtime/comm/inc_offload.hh) wakes its engine: an
// all-reduce whose node answers late (the other rank contributes 100 ms after this one)
// completes with this rank asleep on its link between the client's retransmissions, not
// polling. The loop below is the engine's rest (drivers/waker.hh: arm, one more pass,
// sleep); it counts its passes, and a rank that polled or napped through the wait would
// make thousands. pending() says when a step is outstanding, so an idle engine sets the
// offload aside.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/clock.hh"
#include "comm/inc_offload.hh"
#include "inc/node/switch_node.hh"
#include "test_main.hh"

using namespace loom;

namespace {

constexpr uint64_t count = 256;  // one chunk

comm::inc_plan plan_at(const std::string& address) {
    comm::inc_plan p;
    p.address   = address;
    p.job       = 7;
    p.comm      = 1;
    p.members   = 2;
    p.expected  = 2;
    p.slots     = 4;
    p.timeout_s = 5;
    return p;
}

// The push and pull halves of the all-reduce's one segment, cookies 1 and 2.
void post_allreduce(comm::inc_offload& o, std::vector<int32_t>& in, std::vector<int32_t>& out) {
    engine::offload_op op;
    op.seq        = 1;
    op.count      = count;
    op.dtype      = LOOM_INT32;
    op.deadline_s = now_s() + 10;
    op.cookie     = 1;
    op.data       = in.data();
    assert_int_equal(o.post(op), LOOM_SUCCESS);
    op.cookie = 2;
    op.push   = false;
    op.data   = out.data();
    assert_int_equal(o.post(op), LOOM_SUCCESS);
}

// Polls until both halves completed; returns the passes, each a poll and, when it found
// nothing, a sleep on the offload's waker (at most 1 s: the retransmission timer ends it
// sooner).
int run_until_done(comm::inc_offload& o, bool sleep) {
    int passes = 0, done = 0;
    auto take = [&](int n, const engine::offload_completion* c) {
        for (int i = 0; i < n; ++i) {
            assert_int_equal(c[i].status, LOOM_SUCCESS);
        }
        done += n;
        return n;
    };
    engine::offload_completion c[4];
    while (done < 2 && passes < 1'000'000) {
        ++passes;
        if (take(o.poll(c, 4), c) > 0 || !sleep) {
            continue;
        }
        drivers::waker w = o.idle_waker();
        assert_true(bool(w));
        uint64_t token = w.arm(w.ctx);
        int found      = take(o.poll(c, 4), c);
        w.sleep(w.ctx, token, found > 0 ? 0 : 1'000'000'000);
    }
    assert_int_equal(done, 2);
    return passes;
}

void sleeps_while_the_node_is_late(void**) {
    inc::switch_config cfg;
    cfg.listen   = "tcp:127.0.0.1:0";
    cfg.insecure = true;
    auto node    = inc::switch_node::open(cfg);
    assert_true(node.is_ok());
    std::atomic<bool> stop{false};
    std::thread serve([&] {
        while (!stop.load()) {
            if (!(*node)->poll()) {
                std::this_thread::yield();
            }
        }
    });
    std::string address = (*node)->address();
    auto me             = comm::inc_offload::open(plan_at(address), 0);
    assert_true(me.is_ok());
    auto other = comm::inc_offload::open(plan_at(address), 1);
    assert_true(other.is_ok());
    assert_false((*me)->pending());

    std::vector<int32_t> in(count), out(count), in1(count), out1(count);
    for (uint64_t i = 0; i < count; ++i) {
        in[i]  = int32_t(i);
        in1[i] = int32_t(2 * i);
    }
    std::thread late([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        post_allreduce(**other, in1, out1);
        run_until_done(**other, false);
    });
    post_allreduce(**me, in, out);
    assert_true((*me)->pending());
    int passes = run_until_done(**me, true);
    late.join();
    stop = true;
    serve.join();

    assert_false((*me)->pending());
    for (uint64_t i = 0; i < count; ++i) {
        assert_int_equal(out[i], 3 * int32_t(i));
    }
    // About one pass per retransmission (200 µs, doubling to 20 ms) over the 100 ms.
    if (passes >= 100) {
        fail_msg("%d passes while waiting 100 ms for the node: the rank did not sleep", passes);
    }
}

}  // namespace

LOOM_TEST_MAIN("inc_offload_wake", cmocka_unit_test(sleeps_while_the_node_is_late))
