// SPDX-License-Identifier: Apache-2.0
// The C API's error paths on one rank (self driver): every invalid argument is
// LOOM_ERR_INVALID_ARGUMENT with the output untouched; LOOM_ALGO's one grammar and the
// attribute's algorithm name fail with the allowed names, never a silent fallback; requests,
// the last error, abort and split behave as loom.h documents.
#include <loom/loom.h>

#include <climits>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "api_test_util.hh"
#include "base/params.hh"
#include "schedule/step.hh"

namespace {

using namespace loom::test::api;
using loom::comm::call_kind;

// A call to refuse: an all-reduce of 4 int32 ones (sum, root 0, no attribute), but for
// what a case sets. dtype and op are ints, as a C caller may pass values outside the enums.
struct bad_call {
    call_kind kind               = call_kind::allreduce;
    bool null_input              = false;
    size_t n                     = 4;
    int dtype                    = LOOM_INT32;
    int op                       = LOOM_SUM;
    int root                     = 0;
    const loom_coll_attr_t* attr = nullptr;
};

// Runs `c` blocking and not on a fresh pattern-filled output and checks the status, that
// the output is intact and no request was made, and the last error (its message holding
// `says`).
void expect_rejected(loom_comm_t comm, const bad_call& c, loom_status_t want, const char* what,
                     const char* says = "") {
    static const std::vector<uint8_t> ones(4096, 1);
    const void* in = c.null_input ? nullptr : ones.data();
    call_kind kind = c.kind;
    std::vector<uint8_t> out(4096, pattern);
    for (int blocking = 0; blocking < 2; ++blocking) {
        loom_request_t req  = nullptr;
        loom_request_t* use = blocking ? nullptr : &req;
        loom_status_t st    = c_call_raw(comm, static_cast<int>(kind), in, out.data(), c.n, c.dtype,
                                         c.op, c.root, c.attr, use);
        if (st != want || !intact(out) || req != nullptr) {
            LOOM_FAIL(std::string(loom::comm::kind_name(kind)) + " " + what + ": got " +
                      loom_status_string(st) + " (" + loom_last_error_message() + ")" +
                      (intact(out) ? "" : ", output written") + (req ? ", request made" : ""));
        }
        loom_error_info_t info;
        info.struct_size = sizeof info;
        assert_int_equal(loom_last_error(&info), want);
        assert_int_equal(info.status, want);
        assert_string_equal(info.collective, loom::comm::kind_name(kind));
    }
    expect_message_has(says);
}

void null_buffers_with_count_are_rejected(void**) {
    loom_comm_t comm = make_comm();
    std::vector<uint8_t> out(64, pattern);
    for (auto kind : data_kinds) {
        expect_rejected(comm, {.kind = kind, .null_input = true}, LOOM_ERR_INVALID_ARGUMENT,
                        "NULL sendbuf");
        assert_int_equal(
            call(comm, kind, out.data(), nullptr, 4, LOOM_INT32, LOOM_SUM, nullptr, nullptr),
            LOOM_ERR_INVALID_ARGUMENT);
        expect_message_has("recvbuf is NULL with count 4");
        // count 0 needs no buffers at all.
        assert_int_equal(
            call(comm, kind, nullptr, nullptr, 0, LOOM_INT32, LOOM_SUM, nullptr, nullptr),
            LOOM_SUCCESS);
    }
    assert_true(intact(out));
    loom_comm_destroy(comm);
}

void unknown_dtype_and_op_are_rejected(void**) {
    loom_comm_t comm = make_comm();
    for (auto kind : data_kinds) {
        for (int d : {-1, int{LOOM_DTYPE_COUNT}, 99}) {
            expect_rejected(comm, {.kind = kind, .dtype = d}, LOOM_ERR_INVALID_ARGUMENT,
                            "bad dtype", "unknown dtype");
        }
        if (loom::comm::kind_reduces(kind)) {
            for (int o : {-1, int{LOOM_OP_COUNT}, 1000}) {
                expect_rejected(comm, {.kind = kind, .dtype = LOOM_FLOAT32, .op = o},
                                LOOM_ERR_INVALID_ARGUMENT, "bad op", "unknown op");
            }
        }
    }
    loom_comm_destroy(comm);
}

void root_and_peer_out_of_range_are_rejected(void**) {
    loom_comm_t comm = make_comm();
    for (auto kind : {call_kind::broadcast, call_kind::reduce}) {
        for (int root : {-1, 1, 1 << 30}) {
            expect_rejected(comm, {.kind = kind, .root = root}, LOOM_ERR_INVALID_ARGUMENT,
                            "bad root", "is outside 0..0");
        }
    }
    std::vector<uint8_t> in(64, 1), out(64, pattern);
    for (int peer : {-1, 1, 0}) {
        assert_int_equal(loom_send(comm, in.data(), 4, LOOM_INT32, peer, nullptr, nullptr),
                         LOOM_ERR_INVALID_ARGUMENT);
        assert_int_equal(loom_recv(comm, out.data(), 4, LOOM_INT32, peer, nullptr, nullptr),
                         LOOM_ERR_INVALID_ARGUMENT);
    }
    expect_message_has("peer is this rank");
    assert_true(intact(out));
    loom_comm_destroy(comm);
}

void count_overflow_is_rejected(void**) {
    loom_comm_t comm = make_comm();
    size_t max       = std::numeric_limits<size_t>::max();
    size_t regions   = static_cast<size_t>(loom::schedule::max_region_count);
    for (auto kind : data_kinds) {
        expect_rejected(comm, {.kind = kind, .n = max / 2, .dtype = LOOM_FLOAT64},
                        LOOM_ERR_INVALID_ARGUMENT, "count x size overflows", "overflows size_t");
        expect_rejected(comm, {.kind = kind, .n = regions + 1, .dtype = LOOM_INT8},
                        LOOM_ERR_INVALID_ARGUMENT, "count over the region limit", "region limit");
    }
    loom_comm_destroy(comm);
}

void bad_attributes_are_rejected(void**) {
    loom_comm_t comm = make_comm();
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.struct_size = 2;
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_INVALID_ARGUMENT, "tiny struct_size");
    attr.struct_size = sizeof attr + 8;
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_NOT_SUPPORTED, "newer struct_size");
    loom_coll_attr_init(&attr);
    attr.segments = -2;
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_INVALID_ARGUMENT, "negative segments");
    attr = attr_naming("no-such-algorithm");
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_INVALID_ARGUMENT, "unknown algorithm",
                    "allowed for this call: ring");
    expect_message_has("recursive-doubling");
    // dims needs a ring, torus or mesh: the call fails, naming what would apply.
    attr.algorithm = "dims";
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_NOT_APPLICABLE, "inapplicable algorithm",
                    "allowed for this call: ring");
    // An old caller's attribute (only struct_size and algorithm) still works.
    attr             = attr_naming("ring");
    attr.struct_size = offsetof(loom_coll_attr_t, timeout_s);
    std::vector<int32_t> src{1, 2, 3, 4}, dst(4, 0);
    assert_int_equal(
        loom_allreduce(comm, src.data(), dst.data(), 4, LOOM_INT32, LOOM_SUM, &attr, nullptr),
        LOOM_SUCCESS);
    assert_true(src == dst);
    loom_comm_destroy(comm);
}

// Limits checked before anything is sized by them: each a clear error naming the limit.
void limits_are_checked(void**) {
    loom_comm_t comm = make_comm();
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.channels = 1 << 30;
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_INVALID_ARGUMENT, "2^30 channels",
                    "exceeds the limit of 64");
    loom_coll_attr_init(&attr);
    attr.segments = 1 << 30;
    expect_rejected(comm, {.attr = &attr}, LOOM_ERR_INVALID_ARGUMENT, "2^30 segments",
                    "exceeds the limit of 1024");
    loom_comm_destroy(comm);
    loom_config_t cfg = one_rank_config();
    cfg.size          = INT_MAX;
    cfg.job           = "limits";
    cfg.bootstrap     = "file:/nonexistent/never-created";
    comm              = nullptr;
    assert_int_equal(loom_comm_create(&cfg, &comm), LOOM_ERR_INVALID_ARGUMENT);
    assert_null(comm);
    expect_message_has("size 2147483647 exceeds the limit of 65536 ranks");
}

void loom_algo_grammar_is_strict(void**) {
    using loom::comm::algo_table;
    auto ok = algo_table::parse("allreduce=rabenseifner;alltoall=pairwise");
    assert_true(ok.is_ok());
    assert_true(ok->for_primitive(loom::schedule::collective::allreduce) == "rabenseifner");
    assert_true(ok->for_primitive(loom::schedule::collective::alltoall) == "pairwise");
    assert_true(ok->for_primitive(loom::schedule::collective::broadcast).empty());
    assert_true(algo_table::parse("").is_ok());
    struct bad_case {
        const char* spec;
        loom_status_t code;
        const char* says;
    };
    const bad_case bad[] = {
        {"allreduce=ring;", LOOM_ERR_PARSE, "grammar"},
        {";allreduce=ring", LOOM_ERR_PARSE, "grammar"},
        {"allreduce", LOOM_ERR_PARSE, "is not prim=name"},
        {"=ring", LOOM_ERR_PARSE, "is not prim=name"},
        {"allreduce=", LOOM_ERR_PARSE, "is not prim=name"},
        {"allreduce=ring=dbt", LOOM_ERR_PARSE, "is not prim=name"},
        {"allreduce= ring", LOOM_ERR_PARSE, "space"},
        {"allreduce=ring,dbt", LOOM_ERR_PARSE, "comma"},
        {"allreduce=Ring", LOOM_ERR_INVALID_ARGUMENT,
         "allowed: ring, bidir-ring, reduce-broadcast"},
        {"allreduce=bruck", LOOM_ERR_INVALID_ARGUMENT, "rabenseifner"},
        {"allreducee=ring", LOOM_ERR_INVALID_ARGUMENT, "allowed: broadcast, reduce, allreduce"},
        {"allreduce=ring;allreduce=dbt", LOOM_ERR_INVALID_ARGUMENT, "given twice"},
    };
    for (const auto& b : bad) {
        auto r = algo_table::parse(b.spec);
        if (r.is_ok() || r.error().code() != b.code ||
            !contains(r.error().message().c_str(), b.says)) {
            LOOM_FAIL(std::string("LOOM_ALGO='") + b.spec +
                      "': " + (r.is_ok() ? "accepted" : r.error().to_string()) + ", wanted '" +
                      b.says + "'");
        }
    }
}

// LOOM_ALGO read through the registry (the environment's path): a bad value fails the
// communicator's creation; a valid but inapplicable one fails the call, naming LOOM_ALGO.
void loom_algo_from_registry_is_checked(void**) {
    auto& reg = loom::params::registry::global();
    assert_true(reg.set("LOOM_ALGO", "allreduce=bogus").is_ok());
    loom_config_t cfg = one_rank_config();
    loom_comm_t comm  = nullptr;
    assert_int_equal(loom_comm_create(&cfg, &comm), LOOM_ERR_INVALID_ARGUMENT);
    assert_null(comm);
    expect_message_has("allowed: ring");
    assert_true(reg.set("LOOM_ALGO", "allreduce=dims;broadcast=ring").is_ok());
    comm = make_comm();
    expect_rejected(comm, {}, LOOM_ERR_NOT_APPLICABLE, "LOOM_ALGO inapplicable", "from LOOM_ALGO");
    std::vector<int32_t> src{5, 6}, dst(2, 0);
    assert_int_equal(
        loom_broadcast(comm, src.data(), dst.data(), 2, LOOM_INT32, 0, nullptr, nullptr),
        LOOM_SUCCESS);
    assert_true(src == dst);
    loom_comm_destroy(comm);
    assert_true(reg.set("LOOM_ALGO", "").is_ok());
}

void config_errors_are_rejected(void**) {
    loom_config_t cfg;
    loom_comm_t comm = reinterpret_cast<loom_comm_t>(&cfg);
    assert_int_equal(loom_comm_create(nullptr, nullptr), LOOM_ERR_INVALID_ARGUMENT);
    struct bad_case {
        int rank, size;
        const char* transport;
        const char* topology;
        loom_status_t code;
        const char* says;
    };
    const bad_case bad[] = {
        {0, -1, nullptr, nullptr, LOOM_ERR_INVALID_ARGUMENT, "give both"},
        {1, 1, nullptr, nullptr, LOOM_ERR_INVALID_ARGUMENT, "is not in 0..0"},
        {0, 1, "carrier-pigeon", nullptr, LOOM_ERR_INVALID_ARGUMENT, "unknown driver"},
        {0, 1, nullptr, "torus:2x2", LOOM_ERR_INVALID_ARGUMENT, "has 4 ranks"},
        {0, 1, nullptr, "donut:3", LOOM_ERR_PARSE, ""},
    };
    for (const auto& b : bad) {
        loom_config_init(&cfg);
        cfg.rank         = b.rank;
        cfg.size         = b.size;
        cfg.transport    = b.transport;
        cfg.topology     = b.topology;
        loom_status_t st = loom_comm_create(&cfg, &comm);
        if (st == LOOM_SUCCESS) {
            loom_comm_destroy(comm);
        }
        bool parse_or_invalid =
            b.code == LOOM_ERR_PARSE && (st == LOOM_ERR_PARSE || st == LOOM_ERR_INVALID_ARGUMENT);
        if ((st != b.code && !parse_or_invalid) || comm != nullptr ||
            !contains(loom_last_error_message(), b.says)) {
            LOOM_FAIL(std::string("config case '") + b.says + "': " + loom_status_string(st) + " " +
                      loom_last_error_message());
        }
    }
    cfg             = one_rank_config();
    cfg.struct_size = sizeof cfg + 16;
    assert_int_equal(loom_comm_create(&cfg, &comm), LOOM_ERR_NOT_SUPPORTED);
    // An old caller's config (up to size) is complete enough for one rank.
    cfg.struct_size = offsetof(loom_config_t, bootstrap);
    assert_int_equal(loom_comm_create(&cfg, &comm), LOOM_SUCCESS);
    loom_comm_destroy(comm);
}

void requests_complete_and_free(void**) {
    loom_comm_t comm = make_comm(2);
    std::vector<int32_t> in{1, 2, 3}, a(3, 0), b(3, 0), c(3, 0);
    loom_request_t r1 = nullptr, r2 = nullptr, r3 = nullptr;
    assert_int_equal(
        loom_allreduce(comm, in.data(), a.data(), 3, LOOM_INT32, LOOM_SUM, nullptr, &r1),
        LOOM_SUCCESS);
    assert_int_equal(loom_allgather(comm, in.data(), b.data(), 3, LOOM_INT32, nullptr, &r2),
                     LOOM_SUCCESS);
    // Two requests not freed yet: a third non-blocking call has no handle (max_inflight 2).
    assert_int_equal(loom_alltoall(comm, in.data(), c.data(), 3, LOOM_INT32, nullptr, &r3),
                     LOOM_ERR_NO_RESOURCE);
    assert_null(r3);
    assert_true(c == std::vector<int32_t>(3, 0));
    assert_int_equal(loom_wait_timeout(r1, 5.0), LOOM_SUCCESS);
    assert_int_equal(loom_wait(r2), LOOM_SUCCESS);
    assert_int_equal(loom_wait(r2), LOOM_SUCCESS);  // waiting again returns the same status
    assert_true(a == in && b == in);
    assert_int_equal(loom_request_free(r1), LOOM_SUCCESS);
    assert_int_equal(loom_request_free(r2), LOOM_SUCCESS);
    assert_int_equal(loom_request_free(nullptr), LOOM_SUCCESS);
    assert_int_equal(loom_wait(nullptr), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_test(nullptr, nullptr), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_progress(comm), LOOM_SUCCESS);
    assert_int_equal(loom_progress(nullptr), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_alltoall(comm, in.data(), c.data(), 3, LOOM_INT32, nullptr, &r3),
                     LOOM_SUCCESS);
    assert_int_equal(loom_wait_timeout(r3, -1), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_wait(r3), LOOM_SUCCESS);
    assert_int_equal(loom_request_free(r3), LOOM_SUCCESS);
    assert_true(c == in);
    // A freed handle is reported, not followed.
    assert_int_equal(loom_wait(r3), LOOM_ERR_INVALID_ARGUMENT);
    expect_message_has("already freed");
    assert_int_equal(loom_request_free(r3), LOOM_ERR_INVALID_ARGUMENT);
    loom_comm_destroy(comm);
}

// Handles that name no live request are refused with INVALID_ARGUMENT, never followed: a
// garbage pointer, a stack address, a freed handle reused after its slot serves a newer call,
// and a handle of a destroyed communicator.
void garbage_request_handles_are_refused(void**) {
    uintptr_t garbage[] = {
        0x1,           0x8, 0xdeadbeef, 0xdeadbeefcafef00dull, ~uintptr_t{0}, 0x7fff00000001ull,
        0x100010001ull};
    int local = 0;
    int done  = -1;
    for (uintptr_t g : garbage) {
        auto req = reinterpret_cast<loom_request_t>(g);
        assert_int_equal(loom_test(req, &done), LOOM_ERR_INVALID_ARGUMENT);
        assert_int_equal(loom_wait(req), LOOM_ERR_INVALID_ARGUMENT);
        assert_int_equal(loom_wait_timeout(req, 0.1), LOOM_ERR_INVALID_ARGUMENT);
        assert_int_equal(loom_request_free(req), LOOM_ERR_INVALID_ARGUMENT);
    }
    assert_int_equal(loom_test(reinterpret_cast<loom_request_t>(&local), &done),
                     LOOM_ERR_INVALID_ARGUMENT);
    expect_message_has("not a live request");
    assert_int_equal(done, -1);

    loom_comm_t comm = make_comm(1);
    std::vector<int32_t> in{1, 2, 3}, out(3, 0);
    loom_request_t old = nullptr, fresh = nullptr;
    assert_int_equal(
        loom_allreduce(comm, in.data(), out.data(), 3, LOOM_INT32, LOOM_SUM, nullptr, &old),
        LOOM_SUCCESS);
    assert_int_equal(loom_wait(old), LOOM_SUCCESS);
    assert_int_equal(loom_request_free(old), LOOM_SUCCESS);
    // The same pool slot now serves a newer call: the old handle must not reach it.
    assert_int_equal(
        loom_allreduce(comm, in.data(), out.data(), 3, LOOM_INT32, LOOM_SUM, nullptr, &fresh),
        LOOM_SUCCESS);
    assert_int_equal(loom_test(old, &done), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_request_free(old), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_wait(fresh), LOOM_SUCCESS);
    loom_comm_destroy(comm);
    assert_int_equal(loom_test(fresh, &done), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_request_free(fresh), LOOM_ERR_INVALID_ARGUMENT);
}

void last_error_is_versioned_and_names_the_call(void**) {
    loom_comm_t comm = make_comm();
    std::vector<int32_t> in{1};
    assert_int_equal(
        loom_reduce(comm, in.data(), nullptr, 1, LOOM_INT32, LOOM_SUM, 3, nullptr, nullptr),
        LOOM_ERR_INVALID_ARGUMENT);
    loom_error_info_t info;
    info.struct_size = sizeof info;
    assert_int_equal(loom_last_error(&info), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(info.rank, 0);
    assert_string_equal(info.collective, "reduce");
    assert_true(contains(info.message, "reduce on rank 0: root 3 is outside 0..0"));
    assert_string_equal(info.message, loom_last_error_message());
    // An old caller's struct (status only) gets only what it has room for.
    loom_error_info_t small;
    std::memset(&small, 0x7F, sizeof small);
    small.struct_size = offsetof(loom_error_info_t, rank);
    assert_int_equal(loom_last_error(&small), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(small.status, LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(small.rank, 0x7F7F7F7F);
    assert_int_equal(loom_last_error(nullptr), LOOM_ERR_INVALID_ARGUMENT);
    loom_comm_destroy(comm);
}

void abort_fails_later_calls_promptly(void**) {
    loom_comm_t comm = make_comm();
    std::vector<int32_t> in{1, 2}, out(2, 0);
    assert_int_equal(loom_comm_abort(comm, "test abort"), LOOM_SUCCESS);
    assert_int_equal(
        loom_allreduce(comm, in.data(), out.data(), 2, LOOM_INT32, LOOM_SUM, nullptr, nullptr),
        LOOM_ERR_PEER_FAILURE);
    expect_message_has("aborted");
    assert_true(out == std::vector<int32_t>(2, 0));
    assert_int_equal(loom_comm_abort(nullptr, nullptr), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_comm_destroy(comm), LOOM_SUCCESS);
}

void split_of_one_rank_gives_one_or_none(void**) {
    loom_comm_t comm  = make_comm();
    loom_comm_t child = nullptr, none = reinterpret_cast<loom_comm_t>(&child);
    assert_int_equal(loom_comm_split(comm, 3, 0, &child), LOOM_SUCCESS);
    assert_non_null(child);
    assert_int_equal(loom_comm_size(child), 1);
    assert_int_equal(loom_comm_rank(child), 0);
    std::vector<int32_t> in{4, 5}, out(2, 0);
    assert_int_equal(
        loom_allreduce(child, in.data(), out.data(), 2, LOOM_INT32, LOOM_SUM, nullptr, nullptr),
        LOOM_SUCCESS);
    assert_true(in == out);
    assert_int_equal(loom_comm_split(comm, LOOM_UNDEFINED, 0, &none), LOOM_SUCCESS);
    assert_null(none);
    assert_int_equal(loom_comm_split(comm, -7, 0, &none), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_comm_split(nullptr, 0, 0, &none), LOOM_ERR_INVALID_ARGUMENT);
    // The parent outlives nothing it shares: destroy it first, the child still runs.
    loom_comm_destroy(comm);
    assert_int_equal(loom_barrier(child, nullptr, nullptr), LOOM_SUCCESS);
    loom_comm_destroy(child);
}

// Link counters exist only over fwd:<driver>; anything else says so.
void link_stats_need_a_forwarding_transport(void**) {
    loom_comm_t comm = make_comm();
    loom_link_stat_t stats[4];
    int n = -1;
    assert_int_equal(loom_comm_link_stats(comm, stats, 4, &n), LOOM_ERR_NOT_SUPPORTED);
    assert_int_equal(n, 0);
    expect_message_has("fwd:");
    assert_int_equal(loom_comm_link_stats(comm, nullptr, 1, &n), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_comm_link_stats(comm, stats, -1, &n), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_comm_link_stats(comm, stats, 4, nullptr), LOOM_ERR_INVALID_ARGUMENT);
    assert_int_equal(loom_comm_link_stats(nullptr, stats, 4, &n), LOOM_ERR_INVALID_ARGUMENT);
    loom_comm_destroy(comm);
}

}  // namespace

LOOM_TEST_MAIN("api_errors", cmocka_unit_test(null_buffers_with_count_are_rejected),
               cmocka_unit_test(unknown_dtype_and_op_are_rejected),
               cmocka_unit_test(root_and_peer_out_of_range_are_rejected),
               cmocka_unit_test(count_overflow_is_rejected),
               cmocka_unit_test(bad_attributes_are_rejected), cmocka_unit_test(limits_are_checked),
               cmocka_unit_test(loom_algo_grammar_is_strict),
               cmocka_unit_test(loom_algo_from_registry_is_checked),
               cmocka_unit_test(config_errors_are_rejected),
               cmocka_unit_test(requests_complete_and_free),
               cmocka_unit_test(garbage_request_handles_are_refused),
               cmocka_unit_test(last_error_is_versioned_and_names_the_call),
               cmocka_unit_test(abort_fails_later_calls_promptly),
               cmocka_unit_test(split_of_one_rank_gives_one_or_none),
               cmocka_unit_test(link_stats_need_a_forwarding_transport))
