// SPDX-License-Identifier: Apache-2.0
// The TCP key/value store between real processes: 8 ranks exchange keys (set, get, wait, a
// get parked until a late set); registration errors (duplicate rank, wrong size, wrong job);
// timeouts that name the key and the ranks that never registered; an unreachable
// rendezvous (closed port, a name that does not resolve, no route) fails within its
// deadline with a report naming this host, what was tried and what to check.
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/clock.hh"
#include "base/net.hh"
#include "bootstrap/bootstrap.hh"
#include "proc.hh"
#include "test_main.hh"

using namespace loom;

namespace {

constexpr double deadline_s = 30;  // per scenario: a hang fails the test instead of the suite

bootstrap::identity rank_of(int rank, int size, const char* job = "tcp-test") {
    bootstrap::identity me;
    me.rank   = rank;
    me.size   = size;
    me.job    = job;
    me.secret = std::string(64, 'a');
    return me;
}

std::string address(int port) {
    return "127.0.0.1:" + std::to_string(port);
}

// A report of a rank that could not reach rank 0 names its host, what it tried, how many
// attempts, the last error and what to check.
void expect_connect_report(const std::string& msg, const std::string& tried,
                           const std::string& last_error) {
    for (const std::string& part :
         {"rank 1 on host " + net::host_name() + " ", tried, std::string(" attempt"), last_error,
          std::string("check that rank 0 runs")}) {
        if (msg.find(part) == std::string::npos) {
            LOOM_FAIL("the report lacks '" + part + "': " + msg);
        }
    }
}

// Rank body for the exchange: publishes "addr/<rank>", reads every other rank's, waits for
// the whole set, and checks that a key cannot be set twice.
int exchange(int rank, int size, const std::string& where, std::string* report) {
    auto store = bootstrap::connect_store(where, rank_of(rank, size), 20);
    if (!store) {
        *report = store.error().to_string();
        return 1;
    }
    kv_store& s = **store;
    if (rank == 5) {  // rank 3 asks for this before it exists: the server parks the get
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        if (!s.set("late", "from-5")) {
            return 2;
        }
    }
    if (status st = s.set("addr/" + std::to_string(rank), "value-" + std::to_string(rank)); !st) {
        *report = st.to_string();
        return 3;
    }
    std::vector<std::string> keys;
    for (int r = 0; r < size; ++r) {
        keys.push_back("addr/" + std::to_string(r));
    }
    if (status st = s.wait(keys, 20); !st) {
        *report = st.to_string();
        return 4;
    }
    for (int r = 0; r < size; ++r) {
        auto v = s.get("addr/" + std::to_string(r), 5);
        if (!v || *v != "value-" + std::to_string(r)) {
            *report = "wrong value for rank " + std::to_string(r);
            return 5;
        }
    }
    if (rank == 3) {
        auto late = s.get("late", 20);
        if (!late || *late != "from-5") {
            *report = late ? *late : late.error().to_string();
            return 6;
        }
    }
    status again = s.set("addr/" + std::to_string(rank), "twice");
    if (again.code() != LOOM_ERR_INVALID_ARGUMENT ||
        again.message().find("already set") == std::string::npos) {
        *report = "second set: " + again.to_string();
        return 7;
    }
    return 0;
}

}  // namespace

static void eight_ranks_exchange_keys_through_rank_0(void**) {
    std::string where = address(test::free_port());
    auto out          = test::run_ranks(
                 8, [&](int rank, std::string* report) { return exchange(rank, 8, where, report); },
                 deadline_s);
    expect_all_ok(out);
}

static void a_rank_registered_twice_is_refused(void**) {
    std::string where = address(test::free_port());
    // Processes 1 and 2 both claim rank 1 of 3; rank 2 never comes.
    auto out = test::run_ranks(
        3,
        [&](int k, std::string* report) {
            int rank   = k == 0 ? 0 : 1;
            auto store = bootstrap::connect_store(where, rank_of(rank, 3), 5);
            if (!store) {
                *report = store.error().message();
                return store.error().code() == LOOM_ERR_INVALID_ARGUMENT ? 10 : 1;
            }
            if (rank == 0) {  // keep serving until both claimants have been answered
                (void)(*store)->get("never", 1.0);
            }
            return 0;
        },
        deadline_s);
    assert_int_equal(out[0].code, 0);
    int refused = (out[1].code == 10) + (out[2].code == 10);
    int taken   = (out[1].code == 0) + (out[2].code == 0);
    assert_int_equal(refused, 1);
    assert_int_equal(taken, 1);
    const std::string& msg = out[1].code == 10 ? out[1].text : out[2].text;
    loom::test::expect_has(msg, "rank 1 registered twice");
}

static void a_rank_with_another_size_or_job_is_refused(void**) {
    std::string where = address(test::free_port());
    auto out          = test::run_ranks(
                 3,
                 [&](int k, std::string* report) {
            bootstrap::identity me = k == 0   ? rank_of(0, 4)
                                              : k == 1 ? rank_of(1, 5)
                                                       : rank_of(2, 4, "other-job");
            auto store             = bootstrap::connect_store(where, me, 5);
            if (k == 0) {
                if (!store) {
                    *report = store.error().to_string();
                    return 1;
                }
                (void)(*store)->get("never", 1.0);  // serve while the others are refused
                return 0;
            }
            *report = store ? "accepted" : store.error().message();
            return !store && store.error().code() == LOOM_ERR_INVALID_ARGUMENT ? 10 : 1;
        },
                 deadline_s);
    assert_int_equal(out[0].code, 0);
    assert_int_equal(out[1].code, 10);
    assert_int_equal(out[2].code, 10);
    assert_non_null(std::strstr(out[1].text.c_str(), "says the job has 5 ranks but rank 0"));
    assert_non_null(std::strstr(out[2].text.c_str(), "is in job 'other-job'"));
}

static void a_timeout_names_the_key_and_the_ranks_never_registered(void**) {
    std::string where = address(test::free_port());
    // Ranks 0 and 1 of 4 come; 2 and 3 never do.
    auto out = test::run_ranks(
        2,
        [&](int rank, std::string* report) {
            auto store = bootstrap::connect_store(where, rank_of(rank, 4), 5);
            if (!store) {
                *report = store.error().to_string();
                return 1;
            }
            double t0    = now_s();
            auto v       = (*store)->get("addr/2", 0.5);
            double took  = now_s() - t0;
            *report      = v ? "got a value" : v.error().message();
            bool in_time = took >= 0.45 && took < 2.0;
            return !v && v.error().code() == LOOM_ERR_TIMEOUT && in_time ? 0 : 2;
        },
        deadline_s);
    for (const auto& o : out) {
        if (o.code != 0 || o.text.find("'addr/2'") == std::string::npos ||
            o.text.find("never registered: 2,3") == std::string::npos) {
            LOOM_FAIL("timeout report: code " + std::to_string(o.code) + ": " + o.text);
        }
    }
}

static void an_unreachable_rendezvous_fails_within_the_deadline(void**) {
    std::string where = address(test::free_port());  // nobody listens there
    double t0         = now_s();
    auto store        = bootstrap::connect_store(where, rank_of(1, 2), 1.0);
    double took       = now_s() - t0;
    assert_false(store.is_ok());
    assert_int_equal(store.error().code(), LOOM_ERR_TIMEOUT);
    assert_true(took >= 0.9 && took < 2.5);
    const std::string& msg = store.error().message();
    assert_non_null(std::strstr(msg.c_str(), "could not reach the rendezvous"));
    assert_non_null(std::strstr(msg.c_str(), where.c_str()));
    assert_non_null(std::strstr(msg.c_str(), "rank 1"));
    // Where it was written, what was tried and how often, and what to check.
    expect_connect_report(msg, "tried " + where + ", ", "last error: Connection refused");
}

static void a_rendezvous_name_that_does_not_resolve_says_so(void**) {
    std::string where = "no-such-host.invalid:29500";
    auto store        = bootstrap::connect_store(where, rank_of(1, 2), 0.3);
    assert_false(store.is_ok());
    assert_int_equal(store.error().code(), LOOM_ERR_TIMEOUT);
    const std::string& msg = store.error().message();
    assert_non_null(std::strstr(msg.c_str(), "could not reach the rendezvous "));
    assert_non_null(std::strstr(msg.c_str(), where.c_str()));
    expect_connect_report(msg, "tried nothing (the name did not resolve)",
                          "cannot resolve the host 'no-such-host.invalid'");
}

// A host with no route to the rendezvous: the rank runs in a fresh network namespace whose
// only interface is a loopback that is down, so every address is unreachable at once.
static void a_rendezvous_without_a_route_says_so(void**) {
    auto out = test::run_ranks(
        1,
        [](int, std::string* report) {
            if (::unshare(CLONE_NEWNET) != 0) {
                *report = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
                return 77;
            }
            auto store = bootstrap::connect_store("10.77.0.1:29500", rank_of(1, 2), 0.5);
            *report    = store ? "connected" : store.error().message();
            return store ? 1 : 0;
        },
        deadline_s);
    if (out[0].code == 77) {
        std::printf("# no network namespace here (%s): the unreachable case is not run\n",
                    out[0].text.c_str());
        skip();
    }
    assert_int_equal(out[0].code, 0);
    expect_connect_report(out[0].text, "tried 10.77.0.1:29500, ",
                          "last error: Network is unreachable");
}

static void rank_0_cannot_listen_on_a_taken_port(void**) {
    std::string where = address(test::free_port());
    auto first        = bootstrap::connect_store(where, rank_of(0, 2), 0.2);
    assert_true(first.is_ok());
    auto second = bootstrap::connect_store(where, rank_of(0, 2, "second"), 0.2);
    assert_false(second.is_ok());
    assert_int_equal(second.error().code(), LOOM_ERR_SYSTEM);
    assert_non_null(std::strstr(second.error().message().c_str(), "cannot listen on"));
}

LOOM_TEST_MAIN("bootstrap_store_tcp", cmocka_unit_test(eight_ranks_exchange_keys_through_rank_0),
               cmocka_unit_test(a_rank_registered_twice_is_refused),
               cmocka_unit_test(a_rank_with_another_size_or_job_is_refused),
               cmocka_unit_test(a_timeout_names_the_key_and_the_ranks_never_registered),
               cmocka_unit_test(an_unreachable_rendezvous_fails_within_the_deadline),
               cmocka_unit_test(a_rendezvous_name_that_does_not_resolve_says_so),
               cmocka_unit_test(a_rendezvous_without_a_route_says_so),
               cmocka_unit_test(rank_0_cannot_listen_on_a_taken_port))
