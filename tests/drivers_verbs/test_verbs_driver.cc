// SPDX-License-Identifier: Apache-2.0
// The verbs driver's protocol over a simulated HCA (mock_verbs.hh): queue-pair bring-up,
// eager messages, the clear-to-send rendezvous with one RDMA write with immediate, matching
// (immediates, mismatch, early arrivals, control tags, cancel), error completions, the
// registration cache and the dmabuf path. Endpoints of several ranks live in this process;
// they connect from threads (each waits for the others' connection data) and are then
// polled from the test's thread.
//
// With the argument `missing_device`, only checks that LOOM_VERBS_DEVICE naming a device
// that is not there fails open() with the devices found (meson sets the variable).
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.hh"
#include "base/params.hh"
#include "drivers/verbs/verbs.hh"
#include "file_store.hh"
#include "mock_verbs.hh"
#include "test_main.hh"

namespace {

using namespace loom;
using drivers::completion;
using drivers::verbs::verbs_endpoint;
namespace mock = loom::test::mock_verbs;

constexpr size_t eager_limit = 8192;  // LOOM_VERBS_EAGER_LIMIT's default
constexpr uint64_t call_tag  = uint64_t(7) << 32;

/// A job of `n` ranks over the simulated HCA, connected.
struct job {
    explicit job(int n, const mock::settings& s = {}) : dir(test::file_store::make_dir("verbs")) {
        const auto& api = mock::reset(s);
        store           = std::make_unique<test::file_store>(dir);
        for (int r = 0; r < n; ++r) {
            drivers::endpoint_config c;
            c.rank      = r;
            c.size      = n;
            c.job       = "verbs";
            c.store     = store.get();
            c.timeout_s = 10;
            auto ep     = verbs_endpoint::create(c, api);
            if (!ep) {
                LOOM_FAIL("open: " + ep.error().to_string());
            }
            eps.push_back(std::move(ep).value());
        }
    }
    ~job() {
        eps.clear();
        test::file_store::remove_dir(dir);
    }
    /// Connects every rank, each from its own thread; the statuses by rank.
    std::vector<status> connect_all() {
        std::vector<status> out(eps.size());
        std::vector<std::thread> threads;
        for (size_t r = 0; r < eps.size(); ++r) {
            threads.emplace_back([&, r] { out[r] = eps[r]->connect(); });
        }
        for (auto& t : threads) {
            t.join();
        }
        return out;
    }
    void connect_ok() {
        for (const status& st : connect_all()) {
            if (!st.is_ok()) {
                LOOM_FAIL("connect: " + st.to_string());
            }
        }
    }
    verbs_endpoint& operator[](int r) { return *eps[size_t(r)]; }
    /// Polls every rank once, keeping each rank's completions.
    void poll_all() {
        stash.resize(eps.size());
        for (size_t o = 0; o < eps.size(); ++o) {
            completion c[16];
            int n = eps[o]->poll(c, 16);
            stash[o].insert(stash[o].end(), c, c + n);
        }
    }
    /// Polls every rank until rank `r` has `want` completions (or 5 s pass); how many.
    int wait(int r, completion* out, int want) {
        double deadline = now_s() + 5;
        poll_all();
        while (int(stash[size_t(r)].size()) < want && now_s() < deadline) {
            poll_all();
        }
        auto& mine = stash[size_t(r)];
        int got    = std::min(want, int(mine.size()));
        std::copy(mine.begin(), mine.begin() + got, out);
        mine.erase(mine.begin(), mine.begin() + got);
        return got;
    }
    /// Polls everyone a while (messages in flight arrive), keeping what completes.
    void settle() {
        for (int i = 0; i < 50; ++i) {
            poll_all();
        }
    }
    /// Polls everyone a while; what rank `r` got (others keep theirs).
    std::vector<completion> drain(int r) {
        for (int i = 0; i < 50; ++i) {
            poll_all();
        }
        return std::exchange(stash[size_t(r)], {});
    }

    std::string dir;
    std::unique_ptr<test::file_store> store;
    std::vector<std::unique_ptr<verbs_endpoint>> eps;
    std::vector<std::vector<completion>> stash;  // by rank: completions not yet taken
};

std::vector<char> pattern(size_t len, int seed) {
    std::vector<char> v(len);
    for (size_t i = 0; i < len; ++i) {
        v[i] = char((i * 131 + size_t(seed) * 7) & 0xff);
    }
    return v;
}

void post_ok(loom_status_t st) {
    assert_int_equal(st, LOOM_SUCCESS);
}

// One message from `from` to `to`, receive posted first or last; returns the receive's
// completion after checking the send's.
completion exchange(job& j, int from, int to, size_t len, bool recv_first, uint64_t tag,
                    uint64_t imm, std::vector<char>* got) {
    auto data = pattern(len, int(tag));
    got->assign(len, 0);
    auto& s = j[from].fast();
    auto& r = j[to].fast();
    if (recv_first) {
        post_ok(r.post_recv(r.ctx, from, tag, imm, got->data(), len, 2));
    }
    post_ok(s.post_send(s.ctx, to, tag, imm, data.data(), len, 1));
    completion c{};
    if (!recv_first) {
        j.settle();  // the message arrives before its receive
        post_ok(r.post_recv(r.ctx, from, tag, imm, got->data(), len, 2));
    }
    assert_int_equal(j.wait(to, &c, 1), 1);
    completion sc{};
    assert_int_equal(j.wait(from, &sc, 1), 1);
    assert_int_equal(sc.cookie, 1);
    assert_int_equal(sc.status, LOOM_SUCCESS);
    if (c.status == LOOM_SUCCESS) {
        assert_memory_equal(got->data(), data.data(), len);
    }
    return c;
}

// ---- bring-up ----

void test_no_device(void**) {
    mock::settings s;
    s.devices       = 0;
    const auto& api = mock::reset(s);
    drivers::endpoint_config c;
    auto ep = verbs_endpoint::create(c, api);
    assert_false(ep.is_ok());
    assert_int_equal(ep.error().code(), LOOM_ERR_NOT_SUPPORTED);
    test::expect_has(ep.error().message(),
                     "verbs: no RDMA device (ibv_get_device_list found none)");
}

void check_state_machine(bool ethernet) {
    mock::settings s;
    s.ethernet = ethernet;
    job j(2, s);
    j.connect_ok();
    auto log = mock::transitions();
    // Per queue pair: INIT, RTR, RTS in order, each with the attributes verbs requires
    // (the simulated HCA refuses a transition that lacks them).
    assert_int_equal(log.size(), 6);
    std::vector<mock::transition> per_qp[2];
    for (const auto& t : log) {
        per_qp[t.host].push_back(t);
    }
    for (int h = 0; h < 2; ++h) {
        assert_int_equal(per_qp[h].size(), 3);
        assert_int_equal(per_qp[h][0].to, IBV_QPS_INIT);
        assert_int_equal(per_qp[h][1].to, IBV_QPS_RTR);
        assert_int_equal(per_qp[h][2].to, IBV_QPS_RTS);
        assert_true((per_qp[h][0].attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) != 0);
        const auto& rtr = per_qp[h][1].attr;
        const auto& rts = per_qp[h][2].attr;
        // RTR points at the peer's queue pair and expects the PSN the peer sends from.
        assert_int_equal(rtr.dest_qp_num, per_qp[1 - h][0].qpn);
        assert_int_equal(rtr.rq_psn, per_qp[1 - h][2].attr.sq_psn);
        assert_int_equal(rtr.path_mtu, IBV_MTU_4096);
        assert_int_equal(rts.rnr_retry, 7);  // back-pressure: retry without bound
        if (ethernet) {
            assert_int_equal(rtr.ah_attr.is_global, 1);  // RoCE: addressed by GID
            assert_int_equal(rtr.ah_attr.grh.dgid.raw[15], 1 + (1 - h));
        } else {
            assert_int_equal(rtr.ah_attr.is_global, 0);  // InfiniBand: by LID
            assert_int_equal(rtr.ah_attr.dlid, 1 + (1 - h));
        }
    }
}

void test_qp_state_machine_ib(void**) {
    check_state_machine(false);
}
void test_qp_state_machine_roce(void**) {
    check_state_machine(true);
}

// The transitions as a sequence of CMocka expectations: each modify_qp names the state it
// goes to, in order, and the one told to fail stops the bring-up with the step named.
const drivers::verbs::verbs_api* simulated = nullptr;

int expecting_modify(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
    check_expected(attr->qp_state);
    int rc = mock_type(int);
    return rc != 0 ? rc : simulated->modify_qp(qp, attr, mask);
}

void test_qp_transitions_in_order(void**) {
    namespace v          = drivers::verbs;
    simulated            = &mock::reset();
    v::verbs_api api     = *simulated;
    api.modify_qp        = expecting_modify;
    int n                = 0;
    ibv_device** devices = api.get_device_list(&n);
    ibv_context* ctx     = api.open_device(devices[0]);
    ibv_pd* pd           = api.alloc_pd(ctx);
    ibv_cq* cq           = api.create_cq(ctx, 16, nullptr, nullptr, 0);
    ibv_qp_init_attr init{};
    init.send_cq = init.recv_cq = cq;
    init.qp_type                = IBV_QPT_RC;
    ibv_qp* a                   = api.create_qp(pd, &init);
    ibv_qp* b                   = api.create_qp(pd, &init);
    v::port_info port;
    v::conn_info la{a->qp_num, 1, {}, 11}, lb{b->qp_num, 2, {}, 22};

    expect_value(expecting_modify, attr->qp_state, IBV_QPS_INIT);
    will_return(expecting_modify, 0);
    expect_value(expecting_modify, attr->qp_state, IBV_QPS_RTR);
    will_return(expecting_modify, 0);
    expect_value(expecting_modify, attr->qp_state, IBV_QPS_RTS);
    will_return(expecting_modify, 0);
    assert_true(v::to_init(api, a, port, 0, 1).is_ok());
    assert_true(v::to_rtr_rts(api, a, port, la, lb, 0, 1).is_ok());
    assert_int_equal(a->state, IBV_QPS_RTS);

    // The last step refused: the error names the rank, the peer and the step.
    expect_value(expecting_modify, attr->qp_state, IBV_QPS_INIT);
    will_return(expecting_modify, 0);
    expect_value(expecting_modify, attr->qp_state, IBV_QPS_RTR);
    will_return(expecting_modify, 0);
    expect_value(expecting_modify, attr->qp_state, IBV_QPS_RTS);
    will_return(expecting_modify, EINVAL);
    assert_true(v::to_init(api, b, port, 1, 0).is_ok());
    status st = v::to_rtr_rts(api, b, port, lb, la, 1, 0);
    assert_false(st.is_ok());
    test::expect_has(st.message(), "verbs: rank 1: queue pair to rank 0: RTR -> RTS failed");
    assert_int_equal(b->state, IBV_QPS_RTR);
    api.free_device_list(devices);
}

void test_connection_data_round_trip(void**) {
    drivers::verbs::conn_info c{123456, 77, {}, 0xabcdef};
    for (int i = 0; i < 16; ++i) {
        c.gid.raw[i] = uint8_t(i * 17);
    }
    drivers::verbs::conn_info back;
    assert_true(drivers::verbs::parse_conn_info(drivers::verbs::to_string(c), &back));
    assert_int_equal(back.qpn, c.qpn);
    assert_int_equal(back.lid, c.lid);
    assert_int_equal(back.psn, c.psn);
    assert_memory_equal(back.gid.raw, c.gid.raw, 16);
    for (const char* bad :
         {"", "1:2:3", "1:2:zz:4", "1:70000:00112233445566778899aabbccddeeff:1"}) {
        assert_false(drivers::verbs::parse_conn_info(bad, &back));
    }
}

void test_failed_modify_named(void**) {
    mock::settings s;
    s.fail_to = IBV_QPS_RTR;
    job j(2, s);
    auto st = j.connect_all();
    assert_false(st[0].is_ok());
    test::expect_has(st[0].message(), "verbs: rank 0: queue pair to rank 1: INIT -> RTR failed");
    test::expect_has(st[1].message(), "queue pair to rank 0: INIT -> RTR failed");
}

// ---- messages ----

void test_eager_round_trip(void**) {
    job j(2);
    j.connect_ok();
    std::vector<char> got;
    uint64_t tag = 1;
    for (size_t len : {size_t(0), size_t(1), size_t(8), size_t(4096), eager_limit}) {
        for (int from = 0; from < 2; ++from) {
            completion c = exchange(j, from, 1 - from, len, true, tag, tag * 3, &got);
            assert_int_equal(c.status, LOOM_SUCCESS);
            assert_int_equal(c.cookie, 2);
            assert_int_equal(c.peer, from);
            assert_int_equal(c.bytes, len);
            assert_int_equal(c.tag, tag);
            assert_int_equal(c.imm, tag * 3);
            ++tag;
        }
    }
    assert_int_equal(mock::writes().size(), 0);  // eager: no RDMA write
    assert_int_equal(mock::user_registrations(), 0);
}

void check_rendezvous(bool recv_first) {
    job j(2);
    j.connect_ok();
    size_t len = size_t(1) << 20;
    auto data  = pattern(len, 5);
    std::vector<char> got(len, 0);
    auto& s = j[0].fast();
    auto& r = j[1].fast();
    if (recv_first) {
        post_ok(r.post_recv(r.ctx, 0, 9, 99, got.data(), len, 2));
    }
    post_ok(s.post_send(s.ctx, 1, 9, 99, data.data(), len, 1));
    if (!recv_first) {
        j.settle();
        assert_int_equal(mock::writes().size(), 0);  // nothing moves before the receive
        post_ok(r.post_recv(r.ctx, 0, 9, 99, got.data(), len, 2));
    }
    completion c{};
    assert_int_equal(j.wait(1, &c, 1), 1);
    assert_int_equal(c.status, LOOM_SUCCESS);
    assert_int_equal(c.bytes, len);
    assert_int_equal(c.imm, 99);
    completion sc{};
    assert_int_equal(j.wait(0, &sc, 1), 1);
    assert_int_equal(sc.status, LOOM_SUCCESS);
    assert_memory_equal(got.data(), data.data(), len);
    // Exactly one RDMA write, from the user's send buffer straight into the receive's.
    auto w = mock::writes();
    assert_int_equal(w.size(), 1);
    assert_true(w[0].src == reinterpret_cast<uintptr_t>(data.data()));
    assert_true(w[0].dst == reinterpret_cast<uintptr_t>(got.data()));
    assert_int_equal(w[0].len, len);
}

void test_rendezvous_receive_first(void**) {
    check_rendezvous(true);
}
void test_rendezvous_message_first(void**) {
    check_rendezvous(false);
}

void test_just_above_eager_limit(void**) {
    job j(2);
    j.connect_ok();
    std::vector<char> got;
    completion c = exchange(j, 1, 0, eager_limit + 1, true, 3, 4, &got);
    assert_int_equal(c.status, LOOM_SUCCESS);
    assert_int_equal(mock::writes().size(), 1);
}

void test_registration_cache_hits(void**) {
    job j(2);
    j.connect_ok();
    size_t len = 256 * 1024;
    auto data  = pattern(len, 1);
    std::vector<char> got(len, 0);
    for (int i = 0; i < 4; ++i) {
        auto& s = j[0].fast();
        auto& r = j[1].fast();
        post_ok(r.post_recv(r.ctx, 0, 100 + i, 0, got.data(), len, 2));
        post_ok(s.post_send(s.ctx, 1, 100 + i, 0, data.data(), len, 1));
        completion c{};
        assert_int_equal(j.wait(1, &c, 1), 1);
        assert_int_equal(c.status, LOOM_SUCCESS);
        assert_int_equal(j.wait(0, &c, 1), 1);
    }
    // The two buffers were registered once each; the next three messages hit.
    assert_int_equal(mock::user_registrations(), 2);
    assert_int_equal(j[0].registrations().misses(), 1);
    assert_int_equal(j[0].registrations().hits(), 3);
    assert_int_equal(j[1].registrations().misses(), 1);
    assert_int_equal(j[1].registrations().hits(), 3);
    assert_int_equal(mock::writes().size(), 4);
}

// ---- matching ----

void test_imm_and_length_mismatch_deliver_nothing(void**) {
    job j(2);
    j.connect_ok();
    for (size_t len : {size_t(64), size_t(64 * 1024)}) {  // eager, rendezvous
        for (bool recv_first : {true, false}) {
            for (bool by_length : {false, true}) {
                auto data = pattern(len, 3);
                std::vector<char> got(len, 'x');
                uint64_t tag  = call_tag | (by_length ? 1 : 2) | (recv_first ? 4 : 8) | len;
                auto& s       = j[0].fast();
                auto& r       = j[1].fast();
                size_t want   = by_length ? len / 2 : len;
                size_t before = mock::writes().size();
                if (recv_first) {
                    post_ok(r.post_recv(r.ctx, 0, tag, 5, got.data(), want, 2));
                }
                post_ok(s.post_send(s.ctx, 1, tag, by_length ? 5 : 6, data.data(), len, 1));
                if (!recv_first) {
                    j.settle();
                    post_ok(r.post_recv(r.ctx, 0, tag, 5, got.data(), want, 2));
                }
                completion c{};
                assert_int_equal(j.wait(1, &c, 1), 1);
                assert_int_equal(c.status, LOOM_ERR_MISMATCH);
                assert_int_equal(c.imm, by_length ? 5 : 6);  // the immediate that came
                assert_int_equal(c.bytes, 0);
                for (char ch : got) {
                    assert_int_equal(ch, 'x');  // nothing delivered
                }
                assert_int_equal(mock::writes().size(), before);
                completion sc{};
                assert_int_equal(j.wait(0, &sc, 1), 1);
                assert_int_equal(sc.status, LOOM_SUCCESS);  // the send is done with
            }
        }
    }
}

void test_same_call_other_imm(void**) {
    // A receive of tag A meets a message of tag B of the same call with another immediate:
    // the ranks run different calls, the receive reports it.
    job j(2);
    j.connect_ok();
    uint64_t a = call_tag | 1, b = call_tag | 2;
    char buf[16] = {}, data[16] = {};
    auto& s = j[0].fast();
    auto& r = j[1].fast();
    post_ok(r.post_recv(r.ctx, 0, a, 10, buf, 16, 2));
    post_ok(s.post_send(s.ctx, 1, b, 11, data, 16, 1));
    completion c{};
    assert_int_equal(j.wait(1, &c, 1), 1);
    assert_int_equal(c.status, LOOM_ERR_MISMATCH);
    assert_int_equal(c.imm, 11);
}

void test_early_arrivals_any_order(void**) {
    job j(2);
    j.connect_ok();
    constexpr int n = 24;
    std::vector<std::vector<char>> data, got;
    auto& s = j[0].fast();
    auto& r = j[1].fast();
    for (int i = 0; i < n; ++i) {
        size_t len = (i % 3 == 0) ? 20000 + size_t(i) : 100 + size_t(i);  // some rendezvous
        data.push_back(pattern(len, i));
        got.emplace_back(len, 0);
        post_ok(s.post_send(s.ctx, 1, 1000 + uint64_t(i), uint64_t(i), data.back().data(), len,
                            uint64_t(i)));
    }
    j.settle();
    for (int i = n; i-- > 0;) {  // receives in the reverse order
        post_ok(r.post_recv(r.ctx, 0, 1000 + uint64_t(i), uint64_t(i), got[size_t(i)].data(),
                            got[size_t(i)].size(), 500 + uint64_t(i)));
    }
    std::vector<completion> c(n);
    assert_int_equal(j.wait(1, c.data(), n), n);
    for (const completion& x : c) {
        assert_int_equal(x.status, LOOM_SUCCESS);
        size_t i = size_t(x.cookie - 500);
        assert_int_equal(x.tag, 1000 + i);
        assert_memory_equal(got[i].data(), data[i].data(), data[i].size());
    }
    std::vector<completion> sc(n);
    assert_int_equal(j.wait(0, sc.data(), n), n);
}

void test_control_tags_unsolicited(void**) {
    job j(2);
    j.connect_ok();
    auto& s      = j[0].fast();
    uint64_t tag = drivers::control_tag_bit | 42;
    post_ok(s.post_send(s.ctx, 1, tag, 77, nullptr, 0, 5));
    completion c{};
    assert_int_equal(j.wait(1, &c, 1), 1);
    assert_int_equal(c.cookie, drivers::control_cookie);
    assert_int_equal(c.tag, tag);
    assert_int_equal(c.imm, 77);
    assert_int_equal(c.peer, 0);
    assert_int_equal(j.drain(0).size(), 0);  // no completion for the control send itself
    assert_false(j[0].pending());
}

void test_cancel(void**) {
    job j(2);
    j.connect_ok();
    auto& s = j[0].fast();
    auto& r = j[1].fast();
    // A receive nothing matched: withdrawn, no completion; its tag's message waits for a
    // later receive.
    char buf[32];
    post_ok(r.post_recv(r.ctx, 0, 1, 0, buf, 32, 7));
    assert_true(r.cancel(r.ctx, 7));
    assert_false(r.cancel(r.ctx, 7));
    assert_false(j[1].pending());
    // A rendezvous send whose RTS is out: it goes on from a copy; the receiver gets the
    // original bytes though the user's buffer changed after cancel.
    size_t len = 100000;
    auto data  = pattern(len, 9);
    auto keep  = data;
    std::vector<char> got(len, 0);
    post_ok(s.post_send(s.ctx, 1, 2, 0, data.data(), len, 8));
    j.settle();
    assert_true(s.cancel(s.ctx, 8));
    std::memset(data.data(), 0, len);
    post_ok(r.post_recv(r.ctx, 0, 2, 0, got.data(), len, 9));
    completion c{};
    assert_int_equal(j.wait(1, &c, 1), 1);
    assert_int_equal(c.status, LOOM_SUCCESS);
    assert_memory_equal(got.data(), keep.data(), len);
    for (const completion& x : j.drain(0)) {
        assert_true(x.cookie != 8);  // the cancelled send reports nothing
    }
    assert_false(j[0].pending());
    // An eager send already copied: cancel succeeds, nothing reported.
    char small[8] = {1, 2, 3};
    post_ok(s.post_send(s.ctx, 1, 3, 0, small, 8, 10));
    bool cancelled = s.cancel(s.ctx, 10);  // false if its completion already came
    auto rest      = j.drain(0);
    assert_int_equal(rest.size(), cancelled ? 0 : 1);
}

void test_loopback_own_rank(void**) {
    job j(2);
    j.connect_ok();
    auto& f      = j[0].fast();
    char data[5] = "abcd", got[5] = {};
    post_ok(f.post_recv(f.ctx, 0, 1, 2, got, 5, 1));
    post_ok(f.post_send(f.ctx, 0, 1, 2, data, 5, 2));
    completion c[2];
    assert_int_equal(j.wait(0, c, 2), 2);
    assert_string_equal(got, "abcd");
}

void test_three_ranks_all_pairs(void**) {
    job j(3);
    j.connect_ok();
    std::vector<char> got;
    uint64_t tag = 1;
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) {
            if (a != b) {
                for (size_t len : {size_t(100), size_t(300000)}) {
                    completion c = exchange(j, a, b, len, (tag & 1) != 0, tag, 0, &got);
                    assert_int_equal(c.status, LOOM_SUCCESS);
                    assert_int_equal(c.peer, a);
                    ++tag;
                }
            }
        }
    }
}

// ---- failure ----

void test_error_completion_fails_peer(void**) {
    job j(2);
    j.connect_ok();
    auto& s        = j[0].fast();
    size_t len     = 100000;
    auto big       = pattern(len, 2);
    char small[64] = {}, in[64];
    post_ok(s.post_recv(s.ctx, 1, 50, 0, in, 64, 11));           // posted receive from the peer
    post_ok(s.post_send(s.ctx, 1, 51, 0, big.data(), len, 12));  // rendezvous: RTS delivered
    j.settle();
    mock::fail_host(0, IBV_WC_RETRY_EXC_ERR);
    post_ok(s.post_send(s.ctx, 1, 52, 0, small, 64, 13));  // this one meets the error
    completion c[3];
    assert_int_equal(j.wait(0, c, 3), 3);
    for (const completion& x : c) {
        assert_int_equal(x.status, LOOM_ERR_PEER_FAILURE);
        assert_int_equal(x.peer, 1);
    }
    const status& why = j[0].peer_status(1);
    assert_int_equal(why.code(), LOOM_ERR_PEER_FAILURE);
    test::expect_has(why.message(), "rank 0: peer 1 failed");
    test::expect_has(why.message(), ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
    // Later operations toward it complete the same way.
    post_ok(s.post_send(s.ctx, 1, 53, 0, small, 64, 14));
    assert_int_equal(j.wait(0, c, 1), 1);
    assert_int_equal(c[0].status, LOOM_ERR_PEER_FAILURE);
    assert_false(j[0].pending());
}

void test_close_fails_pending(void**) {
    job j(2);
    j.connect_ok();
    auto& f = j[0].fast();
    char in[8];
    post_ok(f.post_recv(f.ctx, 1, 1, 0, in, 8, 3));
    j[0].close();
    completion c{};
    assert_int_equal(j[0].poll(&c, 1), 1);
    assert_int_equal(c.status, LOOM_ERR_PEER_FAILURE);
    j.eps.clear();
    assert_int_equal(mock::live_objects(), 0);  // everything created was destroyed
}

void test_closed_peer_fails_receives(void**) {
    // RC tells only a sender that its peer is gone: the goodbye of close() tells a rank that
    // waits on receives alone.
    job j(2);
    j.connect_ok();
    auto& f = j[0].fast();
    char in[8];
    post_ok(f.post_recv(f.ctx, 1, 1, 0, in, 8, 3));
    j[1].close();
    completion c{};
    assert_int_equal(j.wait(0, &c, 1), 1);
    assert_int_equal(c.status, LOOM_ERR_PEER_FAILURE);
    assert_int_equal(c.cookie, 3);
    test::expect_has(j[0].peer_status(1).message(), "peer 1 failed: it closed its endpoint");
}

// 200 eager messages with no receive posted: copied out of the receive buffers (`copies`),
// or with no memory for copies, 128 wait in the buffers (the default depth) and the rest at
// the sender's HCA (RNR retry) until receives free buffers.
void check_early_arrivals_beyond_buffers(bool copies) {
    assert_true(params::registry::global()
                    .set("LOOM_VERBS_UNEXPECTED_BYTES", copies ? "268435456" : "0")
                    .is_ok());
    job j(2);
    j.connect_ok();
    constexpr int n = 200;
    auto& s         = j[0].fast();
    auto& r         = j[1].fast();
    std::vector<std::vector<char>> got(n, std::vector<char>(64, 0));
    auto data = pattern(64, 1);
    for (int i = 0; i < n; ++i) {
        post_ok(s.post_send(s.ctx, 1, 5000 + uint64_t(i), 0, data.data(), 64, uint64_t(i)));
    }
    j.settle();
    for (int i = n; i-- > 0;) {
        post_ok(
            r.post_recv(r.ctx, 0, 5000 + uint64_t(i), 0, got[size_t(i)].data(), 64, uint64_t(i)));
    }
    std::vector<completion> c(n);
    assert_int_equal(j.wait(1, c.data(), n), n);
    for (const completion& x : c) {
        assert_int_equal(x.status, LOOM_SUCCESS);
        assert_memory_equal(got[size_t(x.cookie)].data(), data.data(), 64);
    }
    assert_int_equal(j.wait(0, c.data(), n), n);
    assert_true(params::registry::global().set("LOOM_VERBS_UNEXPECTED_BYTES", "268435456").is_ok());
}

void test_early_arrivals_copied_out(void**) {
    check_early_arrivals_beyond_buffers(true);
}
void test_early_arrivals_back_pressure(void**) {
    check_early_arrivals_beyond_buffers(false);
}

// ---- the waker ----

void test_waker_woken_by_arrival_and_ring(void**) {
    job j(2);
    j.connect_ok();
    drivers::waker w = j[1].idle_waker();
    assert_true(bool(w));
    assert_non_null(w.ring);
    for (int round = 0; round < 2; ++round) {
        uint64_t token = w.arm(w.ctx);
        completion none[1];
        assert_int_equal(j[1].poll(none, 1), 0);  // the pass after arming: nothing yet
        double slept = now_s();
        std::thread sender([&] {
            timespec ts{0, 50'000'000};
            ::nanosleep(&ts, nullptr);
            if (round == 0) {  // a peer's message: the HCA raises a completion event
                char b = 1;
                j[0].fast().post_send(j[0].fast().ctx, 1, 1, 0, &b, 1, 1);
            } else {  // work handed over in the process
                w.ring(w.ctx);
            }
        });
        w.sleep(w.ctx, token, 5'000'000'000);
        double woke = now_s() - slept;
        sender.join();
        assert_true(woke >= 0.04);
        assert_true(woke < 2.0);  // by the signal, not the timeout
    }
}

// ---- dmabuf ----

void test_dmabuf_present(void**) {
    job j(2);
    j.connect_ok();
    assert_true(j[0].dmabuf_supported());
    auto mr = j[0].register_dmabuf(3, 4096, 65536);
    assert_true(mr.is_ok());
    assert_int_equal(mock::dmabuf_registrations(), 1);
    j[0].deregister(*mr);
}

void test_dmabuf_absent(void**) {
    mock::settings s;
    s.dmabuf = false;
    job j(2, s);
    j.connect_ok();
    assert_false(j[0].dmabuf_supported());
    auto mr = j[0].register_dmabuf(3, 0, 4096);
    assert_false(mr.is_ok());
    assert_int_equal(mr.error().code(), LOOM_ERR_NOT_SUPPORTED);
    test::expect_has(mr.error().message(), "no ibv_reg_dmabuf_mr");
    assert_int_equal(mock::dmabuf_registrations(), 0);
}

// ---- the real library ----

void test_real_library(void**) {
    // libibverbs itself: without a device (CI), open() says so in one line; with one, a
    // one-rank endpoint opens the device, connects (no queue pairs) and closes.
    drivers::endpoint_config c;
    auto ep = verbs_endpoint::create(c, drivers::verbs::real_verbs_api());
    if (!ep) {
        std::printf("# real libibverbs: %s\n", ep.error().message().c_str());
        if (ep.error().code() == LOOM_ERR_NOT_SUPPORTED) {
            assert_string_equal(ep.error().message().c_str(),
                                "verbs: no RDMA device (ibv_get_device_list found none)");
        }
        return;  // a device whose port is down, or another refusal: said above
    }
    std::printf("# real libibverbs: device %s, dmabuf %s\n", (*ep)->device_name().c_str(),
                (*ep)->dmabuf_supported() ? "available" : "absent");
    assert_true((*ep)->connect().is_ok());
    (*ep)->close();
}

// ---- parameters (run with LOOM_VERBS_DEVICE set) ----

void test_missing_device_named(void**) {
    const auto& api = mock::reset();
    drivers::endpoint_config c;
    auto ep = verbs_endpoint::create(c, api);
    assert_false(ep.is_ok());
    test::expect_has(ep.error().message(), "LOOM_VERBS_DEVICE=mlx5_9 is not a device here");
    test::expect_has(ep.error().message(), "found: mock0");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "missing_device") == 0) {
        const CMUnitTest tests[] = {cmocka_unit_test(test_missing_device_named)};
        return LOOM_RUN_TESTS("drivers_verbs_params", tests);
    }
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_no_device),
        cmocka_unit_test(test_qp_state_machine_ib),
        cmocka_unit_test(test_qp_state_machine_roce),
        cmocka_unit_test(test_qp_transitions_in_order),
        cmocka_unit_test(test_connection_data_round_trip),
        cmocka_unit_test(test_failed_modify_named),
        cmocka_unit_test(test_eager_round_trip),
        cmocka_unit_test(test_rendezvous_receive_first),
        cmocka_unit_test(test_rendezvous_message_first),
        cmocka_unit_test(test_just_above_eager_limit),
        cmocka_unit_test(test_registration_cache_hits),
        cmocka_unit_test(test_imm_and_length_mismatch_deliver_nothing),
        cmocka_unit_test(test_same_call_other_imm),
        cmocka_unit_test(test_early_arrivals_any_order),
        cmocka_unit_test(test_control_tags_unsolicited),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_loopback_own_rank),
        cmocka_unit_test(test_three_ranks_all_pairs),
        cmocka_unit_test(test_error_completion_fails_peer),
        cmocka_unit_test(test_close_fails_pending),
        cmocka_unit_test(test_closed_peer_fails_receives),
        cmocka_unit_test(test_early_arrivals_copied_out),
        cmocka_unit_test(test_early_arrivals_back_pressure),
        cmocka_unit_test(test_waker_woken_by_arrival_and_ring),
        cmocka_unit_test(test_dmabuf_present),
        cmocka_unit_test(test_dmabuf_absent),
        cmocka_unit_test(test_real_library),
    };
    return LOOM_RUN_TESTS("drivers_verbs", tests);
}
