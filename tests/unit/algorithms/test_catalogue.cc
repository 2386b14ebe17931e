// The catalogue contract: every algorithm the foundation issue names is registered under
// its exact name, each entry documents itself, (primitive, name) is unique, and every
// algorithm rejects an invalid call with an invalid-argument status (not a crash).
#include <set>
#include <string>
#include <utility>

#include "algorithms/algorithm.hh"
#include "test_main.hh"

using namespace loom;
using schedule::collective;

static void every_named_algorithm_is_registered(void**) {
    const std::pair<collective, const char*> required[] = {
        {collective::broadcast, "ring"},           {collective::broadcast, "binomial"},
        {collective::broadcast, "dims"},           {collective::reduce, "ring"},
        {collective::reduce, "binomial"},          {collective::reduce, "dims"},
        {collective::allreduce, "ring"},           {collective::allreduce, "dbt"},
        {collective::allreduce, "recursive-doubling"}, {collective::allreduce, "rabenseifner"},
        {collective::allreduce, "reduce-broadcast"}, {collective::allreduce, "dims"},
        {collective::reduce_scatter, "ring"},      {collective::reduce_scatter, "recursive-halving"},
        {collective::reduce_scatter, "pat"},       {collective::reduce_scatter, "dims"},
        {collective::allgather, "ring"},           {collective::allgather, "recursive-doubling"},
        {collective::allgather, "pat"},            {collective::allgather, "dims"},
        {collective::alltoall, "pairwise"},        {collective::alltoall, "ring-relay"},
        {collective::alltoall, "bruck"},           {collective::alltoall, "dor-relay"},
        {collective::alltoall, "dims"},            {collective::sendrecv, "direct"},
    };
    for (const auto& [coll, name] : required) {
        if (!algorithms::find(coll, name)) {
            LOOM_FAIL(std::string(schedule::collective_name(coll)) + " " + name +
                      " is not registered");
        }
    }
}

static void entries_are_documented_and_unique(void**) {
    std::set<std::pair<int, std::string>> seen;
    for (const auto* a : algorithms::catalogue()) {
        assert_false(a->name.empty());
        assert_false(a->summary.empty());
        assert_false(a->formula.empty());
        assert_false(a->constraints.empty());
        assert_non_null(a->applicable);
        assert_non_null(a->build);
        assert_non_null(a->predict);
        assert_true(seen.insert({static_cast<int>(a->primitive), std::string(a->name)}).second);
    }
}

static void invalid_calls_are_rejected_by_every_algorithm(void**) {
    for (const auto* a : algorithms::catalogue()) {
        algorithms::call good;
        good.coll   = a->primitive;
        good.nranks = 4;
        good.topo   = *topology::shape::parse("torus:2x2");
        good.count  = 10;
        auto expect_invalid = [&](algorithms::call c, const char* what) {
            auto st = algorithms::check_call(*a, c);
            if (st.code() != LOOM_ERR_INVALID_ARGUMENT) {
                LOOM_FAIL(std::string(a->name) + ": " + what + " gave " + st.to_string());
            }
        };
        auto c   = good;
        c.nranks = 0;
        expect_invalid(c, "N = 0");
        c       = good;
        c.count = -1;
        expect_invalid(c, "negative count");
        c      = good;
        c.topo = topology::shape::star(5);
        expect_invalid(c, "topology size != N");
        c          = good;
        c.segments = 0;
        expect_invalid(c, "0 segments");
        if (schedule::has_root(a->primitive)) {
            c      = good;
            c.root = 4;
            expect_invalid(c, "root out of range");
        }
        c      = good;
        c.coll = a->primitive == collective::allreduce ? collective::broadcast : collective::allreduce;
        expect_invalid(c, "wrong primitive");
    }
}

static void names_for_lists_the_allowed_names(void**) {
    std::string names = algorithms::names_for(collective::allreduce);
    assert_true(names.find("ring") != std::string::npos);
    assert_null(algorithms::find(collective::allreduce, "no-such-algorithm"));
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_named_algorithm_is_registered),
        cmocka_unit_test(entries_are_documented_and_unique),
        cmocka_unit_test(invalid_calls_are_rejected_by_every_algorithm),
        cmocka_unit_test(names_for_lists_the_allowed_names),
    };
    return LOOM_RUN_TESTS("algorithms_catalogue", tests);
}
