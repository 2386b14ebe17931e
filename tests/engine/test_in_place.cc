// SPDX-License-Identifier: Apache-2.0
// What an in-place call sets aside (engine/in_place.hh), checked on compiled plans.
//
// Every catalogue schedule at several N, counts and roots is checked by a second, plain
// method: for each step still reading the input itself and each step writing output bytes on
// top of those input bytes, a breadth-first walk of the dependencies must find the reader
// before the writer (or they are one step reducing or copying the same elements). Steps
// reading the copy must read inside the ranges set aside. Then the cases that matter are
// pinned: a ring all-reduce and a broadcast's root set nothing aside, and a hand-written
// schedule whose send races a receive on top of its bytes has exactly that send's bytes set
// aside. Running in place is checked on real buffers by engine_multiproc and api_multiproc.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "algorithms/algorithm.hh"
#include "engine/engine.hh"
#include "engine/in_place.hh"
#include "schedule/schedule.hh"
#include "test_main.hh"
#include "value_or_fail.hh"

using namespace loom;
using schedule::step_kind;

namespace {

// Is `a` an ancestor of `b`? Breadth-first over the dependencies, back from b.
bool precedes(const schedule::rank_schedule& rs, uint32_t a, uint32_t b) {
    std::vector<uint8_t> seen(rs.steps.size(), 0);
    std::vector<uint32_t> frontier{b};
    while (!frontier.empty()) {
        uint32_t at = frontier.back();
        frontier.pop_back();
        const schedule::step& s = rs.steps[at];
        for (int d = 0; d < s.ndeps; ++d) {
            uint32_t dep = rs.deps_of(s)[d];
            if (dep == a) {
                return true;
            }
            if (!seen[dep]) {
                seen[dep] = 1;
                frontier.push_back(dep);
            }
        }
    }
    return false;
}

struct range {
    uint32_t step;
    int64_t lo, hi;
};

bool reads_input(step_kind k) {
    return k == step_kind::send || k == step_kind::recv_reduce || k == step_kind::local_reduce ||
           k == step_kind::local_copy || k == step_kind::inc_push;
}

bool inside_aside(const engine::plan& p, int64_t lo, int64_t hi) {
    for (const auto& [a, b] : p.in_place_aside) {
        if (a <= lo && hi <= b) {
            return true;
        }
    }
    return false;
}

// "" or what is wrong with p's in-place analysis, found the plain way.
std::string check_plan(const schedule::rank_schedule& rs, const engine::plan& p) {
    if (!p.in_place_analysed) {
        return "not analysed";
    }
    std::vector<range> direct;  // input reads left on the input (output coordinates)
    std::vector<range> writes;
    for (uint32_t i = 0; i < p.steps.size(); ++i) {
        const engine::plan_step& s = p.steps[i];
        if (s.bytes <= 0) {
            continue;
        }
        auto look = [&](engine::buffer b, int64_t off) {
            if (b == engine::buffer::input) {
                direct.push_back({i, off + p.in_place_shift, off + p.in_place_shift + s.bytes});
            } else if (b == engine::buffer::input_aside && !inside_aside(p, off, off + s.bytes)) {
                return false;
            }
            return true;
        };
        if (reads_input(s.kind) && !look(s.src_buf, s.src)) {
            return "step " + std::to_string(i) + " reads the copy outside what was set aside";
        }
        if (s.kind == step_kind::local_reduce && !look(s.aux_buf, s.aux)) {
            return "step " + std::to_string(i) + " reads the copy outside what was set aside";
        }
        bool onto_itself = s.kind == step_kind::local_copy && s.src_buf == engine::buffer::input &&
                           s.src + p.in_place_shift == s.dst;
        if (s.kind != step_kind::send && s.kind != step_kind::inc_push &&
            s.dst_buf == engine::buffer::output && !onto_itself) {
            writes.push_back({i, s.dst, s.dst + s.bytes});
        }
        if (s.kind == step_kind::recv_copy && s.aux_buf == engine::buffer::output) {
            writes.push_back({i, s.aux, s.aux + s.bytes});
        }
    }
    for (const range& w : writes) {
        for (const range& r : direct) {
            if (r.hi <= w.lo || w.hi <= r.lo) {
                continue;
            }
            step_kind k = p.steps[w.step].kind;
            bool same   = r.step == w.step && r.lo == w.lo && r.hi == w.hi &&
                        (k == step_kind::recv_reduce || k == step_kind::local_reduce ||
                         k == step_kind::local_copy);
            bool in_order = r.step != w.step && precedes(rs, r.step, w.step);
            if (!same && !in_order) {
                return "step " + std::to_string(r.step) + " reads input bytes [" +
                       std::to_string(r.lo) + ", " + std::to_string(r.hi) + ") that step " +
                       std::to_string(w.step) + " may overwrite first";
            }
        }
    }
    return "";
}

void every_catalogue_plan_sets_aside_what_races(void**) {
    int plans = 0, with_aside = 0;
    std::map<std::string, int> aside_by_algorithm;  // plans that set something aside
    for (int n : {2, 3, 4, 8}) {
        const char* lattice = n == 8 ? "torus:2x2x2" : n == 4 ? "torus:2x2" : nullptr;
        auto shape          = lattice ? *topology::shape::parse(lattice)
                                      : *topology::shape::parse("ring:" + std::to_string(n));
        for (const auto* a : algorithms::catalogue()) {
            for (int64_t count : {int64_t{7}, int64_t{1000}}) {
                for (int root : {0, n - 1}) {
                    algorithms::call c;
                    c.coll = a->primitive, c.nranks = n, c.count = count, c.root = root;
                    c.peer     = (root + 1) % n;
                    c.segments = 2;
                    c.topo     = a->topology_aware ? shape : topology::shape::star(n);
                    if (!algorithms::check_call(*a, c)) {
                        continue;
                    }
                    for (int rank = 0; rank < n; ++rank) {
                        auto rs = test::value_or_fail(algorithms::generate_rank(*a, c, rank));
                        auto p  = test::value_or_fail(engine::compile(
                             algorithms::schedule_info_for(*a, c), rs, LOOM_INT32, 1));
                        std::string err = check_plan(rs, *p);
                        if (!err.empty()) {
                            LOOM_FAIL(std::string(a->name) + " N=" + std::to_string(n) + " count=" +
                                      std::to_string(count) + " root=" + std::to_string(root) +
                                      " rank " + std::to_string(rank) + ": " + err);
                        }
                        ++plans;
                        if (!p->in_place_aside.empty()) {
                            ++with_aside;
                            ++aside_by_algorithm[std::string(schedule::collective_name(c.coll)) +
                                                 "/" + std::string(a->name)];
                        }
                    }
                }
            }
        }
    }
    std::printf("# %d plans checked; %d set some input aside in place, %d none\n", plans,
                with_aside, plans - with_aside);
    for (const auto& [name, k] : aside_by_algorithm) {
        std::printf("#   %s: %d plans set input aside\n", name.c_str(), k);
    }
    assert_true(plans > 500);
}

std::shared_ptr<const engine::plan> catalogue_plan(const char* coll, const char* algo, int n,
                                                   int rank, int root = 0) {
    algorithms::call c;
    assert_true(schedule::parse_collective(coll, &c.coll));
    c.nranks = n, c.count = 1 << 16, c.root = root, c.peer = (root + 1) % n;
    c.topo        = topology::shape::star(n);
    const auto* a = algorithms::find(c.coll, algo);
    assert_non_null(a);
    auto rs = test::value_or_fail(algorithms::generate_rank(*a, c, rank));
    return test::value_or_fail(
        engine::compile(algorithms::schedule_info_for(*a, c), rs, LOOM_FLOAT32, 1));
}

// Ring all-reduce reads each input block before the block on top of it is written (the
// later steps depend on the first send), so nothing is copied: before, every in-place
// all-reduce copied its whole input first.
void ring_allreduce_sets_nothing_aside(void**) {
    for (int rank = 0; rank < 4; ++rank) {
        auto p = catalogue_plan("allreduce", "ring", 4, rank);
        assert_true(p->in_place_analysed);
        assert_int_equal(p->in_place_aside.size(), 0);
    }
}

// The root of an in-place broadcast neither sets its input aside nor copies it onto itself.
void broadcast_root_copies_nothing(void**) {
    for (const char* algo : {"binomial", "ring", "scatter-allgather"}) {
        auto p = catalogue_plan("broadcast", algo, 4, 0);
        assert_true(p->in_place_analysed);
        if (!p->in_place_aside.empty()) {
            LOOM_FAIL(std::string(algo) + ": the root sets input aside");
        }
    }
}

// A 2-rank all-reduce whose final receive does not wait for the first send: the bytes it
// lands on are still being sent, so exactly those are set aside and that send reads them.
void a_racing_send_reads_its_bytes_set_aside(void**) {
    const char* text =
        "loom-schedule 1\n"
        "collective=allreduce ranks=2 count=4 root=0 peer=1 dtype_size=4 segments=1 "
        "channels=1 algorithm=racing topology=star:2\n"
        "rank 0 scratch=0\n"
        "  0 send peer=1 src=in@2+2\n"
        "  1 recv_reduce peer=1 dst=out@0+2 src=in@0+2\n"
        "  2 send peer=1 src=out@0+2 deps=1\n"
        "  3 recv peer=1 dst=out@2+2 deps=1\n"
        "rank 1 scratch=0\n"
        "  0 send peer=0 src=in@0+2\n"
        "  1 recv_reduce peer=0 dst=out@2+2 src=in@2+2\n"
        "  2 send peer=0 src=out@2+2 deps=1,0\n"
        "  3 recv peer=0 dst=out@0+2 deps=1,0\n";
    auto s = test::value_or_fail(schedule::parse_text(text));
    auto racing =
        test::value_or_fail(engine::compile(s.info, s.ranks[0], LOOM_FLOAT32, 1));  // rank 0
    assert_true(racing->in_place_analysed);
    assert_int_equal(racing->in_place_aside.size(), 1);
    assert_int_equal(racing->in_place_aside[0].first, 8);
    assert_int_equal(racing->in_place_aside[0].second, 16);
    assert_int_equal(racing->steps[0].src_buf, engine::buffer::input_aside);
    assert_int_equal(racing->steps[1].src_buf, engine::buffer::input);  // reduces in place
    auto ordered = test::value_or_fail(engine::compile(s.info, s.ranks[1], LOOM_FLOAT32, 1));
    assert_int_equal(ordered->in_place_aside.size(), 0);
    assert_string_equal(check_plan(s.ranks[0], *racing).c_str(), "");
}

}  // namespace

LOOM_TEST_MAIN("engine_in_place", cmocka_unit_test(every_catalogue_plan_sets_aside_what_races),
               cmocka_unit_test(ring_allreduce_sets_nothing_aside),
               cmocka_unit_test(broadcast_root_copies_nothing),
               cmocka_unit_test(a_racing_send_reads_its_bytes_set_aside))
