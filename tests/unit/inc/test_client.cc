// SPDX-License-Identifier: Apache-2.0
// inc/client with inc/aggregator over an in-memory network that drops, duplicates and
// reorders packets on a virtual clock: every member ends with the exact result for any
// size (0, one element, chunk boundaries, many windows), integer sums exactly, float sums in
// deterministic mode bitwise equal to the rank-order sum under any loss pattern; with the
// aggregation node gone every client times out naming the missing chunk.
#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "inc/aggregator/aggregator.hh"
#include "inc/client/client.hh"
#include "kernels/reduce.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;

namespace {

struct faults {
    double drop = 0, duplicate = 0;
    bool reorder = false;
};

// Packets in flight: to the node (to = -1) or to a member. Loss and duplication are drawn
// per packet and per direction.
struct network final : packet_sink {
    struct in_flight {
        int to;
        std::vector<uint8_t> bytes;
    };
    faults f;
    std::mt19937_64 rng;
    std::deque<in_flight> q;
    uint32_t members = 0;
    uint64_t dropped = 0;
    bool node_alive  = true;

    network(faults fs, uint64_t seed, uint32_t n) : f(fs), rng(seed), members(n) {}
    bool draw(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
    void put(int to, const uint8_t* p, size_t len) {
        if (draw(f.drop)) {
            ++dropped;
            return;
        }
        int copies = draw(f.duplicate) ? 2 : 1;
        for (int i = 0; i < copies; ++i) {
            q.push_back({to, std::vector<uint8_t>(p, p + len)});
        }
    }
    void unicast(uint64_t, uint64_t, uint32_t rank, const uint8_t* p, size_t len) override {
        put(int(rank), p, len);
    }
    void multicast(uint64_t, uint64_t, const uint8_t* p, size_t len) override {
        for (uint32_t r = 0; r < members; ++r) {
            put(int(r), p, len);
        }
    }
};

struct member_uplink final : uplink {
    network* net;
    void send(const uint8_t* p, size_t len) override { net->put(-1, p, len); }
};

template <typename T>
struct run_result {
    std::vector<std::vector<T>> out;
    std::vector<status> errors;
    uint64_t retransmitted = 0;
};

// Runs one all-reduce of `count` elements among n members; in[r] is member r's input.
template <typename T>
run_result<T> all_reduce(const std::vector<std::vector<T>>& in, loom_dtype_t dtype, loom_op_t op,
                         bool deterministic, faults f, uint64_t seed, bool node_dies = false) {
    auto n       = uint32_t(in.size());
    size_t count = in[0].size();
    network net(f, seed, n);
    aggregator agg;
    group_config g;
    g.job = g.comm = 1;
    g.members = g.expected = n;
    g.slots                = 8;
    g.deterministic        = deterministic;
    assert_true(agg.admit(g).is_ok());
    std::vector<client> clients;
    std::vector<member_uplink> ups(n);
    run_result<T> res;
    res.out.assign(n, std::vector<T>(count));
    res.errors.assign(n, status::ok());
    double now = 0;
    for (uint32_t r = 0; r < n; ++r) {
        client_config c;
        c.job = c.comm   = 1;
        c.rank           = r;
        c.members        = n;
        c.window         = 8;
        c.chunk_elements = uint32_t(max_payload_bytes / sizeof(T));
        c.deterministic  = deterministic;
        c.deadline_s     = 2;
        clients.emplace_back(c);
        ups[r].net = &net;
        assert_true(
            clients[r].start(42, dtype, op, in[r].data(), res.out[r].data(), count, now).is_ok());
    }
    if (node_dies) {
        net.node_alive = false;
    }
    for (int step = 0; step < 200000; ++step) {
        now += 20e-6;
        bool all_done = true;
        for (uint32_t r = 0; r < n; ++r) {
            if (!clients[r].done() && res.errors[r].is_ok()) {
                res.errors[r] = clients[r].poll(now, ups[r]);
                all_done      = false;
            }
        }
        if (all_done) {
            break;
        }
        // Deliver what is in flight (in a random order when reordering).
        size_t k = net.q.size();
        if (f.reorder) {
            std::shuffle(net.q.begin(), net.q.end(), net.rng);
        }
        for (size_t i = 0; i < k; ++i) {
            network::in_flight p = std::move(net.q.front());
            net.q.pop_front();
            header h;
            const uint8_t* payload = nullptr;
            assert_int_equal(int(parse(p.bytes.data(), p.bytes.size(), &h, &payload)),
                             int(parse_error::none));
            if (p.to < 0) {
                if (net.node_alive) {
                    agg.on_packet(h, payload, net);
                }
            } else {
                clients[size_t(p.to)].on_packet(h, payload, now, ups[size_t(p.to)]);
            }
        }
    }
    for (const client& c : clients) {
        res.retransmitted += c.stats().retransmitted;
    }
    return res;
}

std::vector<std::vector<int64_t>> int_inputs(uint32_t n, size_t count) {
    std::vector<std::vector<int64_t>> in(n, std::vector<int64_t>(count));
    for (uint32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            in[r][i] = int64_t(r + 1) * 1000003 - int64_t(i * 7 % 1000) * int64_t(r % 3);
        }
    }
    return in;
}

void exact_integer_sums_for_every_size_and_loss(void**) {
    const size_t counts[]          = {0, 1, 1023, 1024, 1025, 100003};
    const faults kinds[]           = {{0, 0, false}, {0.01, 0, false}, {0.10, 0.05, true}};
    uint64_t lossy_retransmissions = 0;
    for (uint32_t n : {1u, 2u, 5u, 9u}) {
        for (size_t count : counts) {
            for (const faults& f : kinds) {
                if (count == 100003 && n > 5) {
                    continue;  // keeps the test in seconds; 5 members cover many windows
                }
                auto in  = int_inputs(n, count);
                auto res = all_reduce(in, LOOM_INT64, LOOM_SUM, false, f, n * 31 + count);
                std::vector<int64_t> want(count, 0);
                for (uint32_t r = 0; r < n; ++r) {
                    for (size_t i = 0; i < count; ++i) {
                        want[i] += in[r][i];
                    }
                }
                for (uint32_t r = 0; r < n; ++r) {
                    if (!res.errors[r].is_ok()) {
                        LOOM_FAIL(res.errors[r].to_string());
                    }
                    assert_memory_equal(res.out[r].data(), want.data(), count * sizeof(int64_t));
                }
                assert_true(res.retransmitted == 0 || f.drop > 0);
                if (f.drop > 0) {
                    lossy_retransmissions += res.retransmitted;
                }
            }
        }
    }
    assert_true(lossy_retransmissions > 100);  // the loss happened, and was repaired
}

void deterministic_float_sums_survive_any_loss_bitwise(void**) {
    const uint32_t n   = 6;
    const size_t count = 5000;
    std::vector<std::vector<float>> in(n, std::vector<float>(count));
    for (uint32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            in[r][i] = r == 0 ? 1e8f : 3.0f + float(i % 17) * 1e-3f * float(r);
        }
    }
    std::vector<float> want = in[0];
    auto add                = kernels::reduce_kernel(LOOM_FLOAT32, LOOM_SUM);
    for (uint32_t r = 1; r < n; ++r) {
        add(want.data(), want.data(), in[r].data(), count);
    }
    for (uint64_t seed : {1u, 2u, 3u}) {
        auto res = all_reduce(in, LOOM_FLOAT32, LOOM_SUM, true, faults{0.10, 0.05, true}, seed);
        for (uint32_t r = 0; r < n; ++r) {
            assert_true(res.errors[r].is_ok());
            assert_memory_equal(res.out[r].data(), want.data(), count * sizeof(float));
        }
    }
}

void min_max_and_narrow_types(void**) {
    const uint32_t n   = 4;
    const size_t count = 3000;
    std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(count));
    for (uint32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            in[r][i] = int32_t((i * 2654435761u + r * 40503u) % 100000) - 50000;
        }
    }
    for (loom_op_t op : {LOOM_MIN, LOOM_MAX}) {
        auto res = all_reduce(in, LOOM_INT32, op, false, faults{0.05, 0.05, true}, op);
        for (size_t i = 0; i < count; ++i) {
            int32_t want = in[0][i];
            for (uint32_t r = 1; r < n; ++r) {
                want = op == LOOM_MIN ? std::min(want, in[r][i]) : std::max(want, in[r][i]);
            }
            for (uint32_t r = 0; r < n; ++r) {
                assert_int_equal(res.out[r][i], want);
            }
        }
    }
    // bfloat16 sums of small integers are exact: 4 members × values ≤ 8.
    std::vector<std::vector<uint16_t>> b(n, std::vector<uint16_t>(count));
    for (uint32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            b[r][i] = kernels::float_to_bfloat16(float((i + r) % 9));
        }
    }
    auto res = all_reduce(b, LOOM_BFLOAT16, LOOM_SUM, false, faults{0.05, 0, true}, 9);
    for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (uint32_t r = 0; r < n; ++r) {
            want += float((i + r) % 9);
        }
        assert_true(kernels::bfloat16_to_float(res.out[0][i]) == want);
    }
}

void a_dead_node_times_out_naming_the_chunk(void**) {
    auto in  = int_inputs(3, 5000);
    auto res = all_reduce(in, LOOM_INT64, LOOM_SUM, false, faults{}, 5, true);
    for (uint32_t r = 0; r < 3; ++r) {
        assert_int_equal(res.errors[r].code(), LOOM_ERR_TIMEOUT);
        assert_non_null(std::strstr(res.errors[r].message().c_str(), "no result for chunk"));
    }
    assert_true(res.retransmitted > 0);
}

void bad_calls_are_refused(void**) {
    client_config c;
    client cl(c);
    int8_t x = 0;
    assert_false(cl.start(1, LOOM_INT8, LOOM_SUM, &x, &x, 1, 0).is_ok());
    assert_false(cl.start(1, LOOM_INT32, LOOM_PROD, &x, &x, 1, 0).is_ok());
    std::vector<int32_t> v(10000);
    assert_true(cl.start(1, LOOM_INT32, LOOM_SUM, v.data(), v.data(), v.size(), 0).is_ok());
    assert_false(cl.start(2, LOOM_INT32, LOOM_SUM, v.data(), v.data(), v.size(), 0).is_ok());
}

}  // namespace

LOOM_TEST_MAIN("inc_client", cmocka_unit_test(exact_integer_sums_for_every_size_and_loss),
               cmocka_unit_test(deterministic_float_sums_survive_any_loss_bitwise),
               cmocka_unit_test(min_max_and_narrow_types),
               cmocka_unit_test(a_dead_node_times_out_naming_the_chunk),
               cmocka_unit_test(bad_calls_are_refused))
