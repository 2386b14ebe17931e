// SPDX-License-Identifier: Apache-2.0
// The verification sweep shared by the algorithm suites: generate an algorithm's schedule
// for a call, verify it, and report the first failure with the whole call in the message.
// Also the small helpers every suite needs (look-up, call construction, byte comparison),
// so that each suite states only what is particular to its algorithm.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hh"
#include "schedule/verifier.hh"

namespace loom::test {

struct sweep_result {
    int verified       = 0;
    int not_applicable = 0;
    std::string first_failure;
};

/// "allreduce ring N=5 count=7 root=2 topo=star:5 P=1"
std::string describe_call(const algorithms::algorithm& a, const algorithms::call& c);

/// The registered algorithm; fails the running test when there is none.
const algorithms::algorithm& find_algorithm(schedule::collective coll, std::string_view name);

/// A call on `topo` (N = topo.size()); the other fields keep their defaults (peer 0, 4-byte
/// elements, one channel, toward_plus ties).
algorithms::call make_call(schedule::collective coll, const topology::shape& topo, int64_t count,
                           int root = 0, int segments = 1);
/// The same on star:nranks.
algorithms::call make_call(schedule::collective coll, int nranks, int64_t count, int root = 0,
                           int segments = 1);

/// Counted bytes against a stated n_beta·M: n_beta is a fraction like 30/11, so n_beta·M
/// need not be the double the verifier sums. 1e-9 relative is far below one byte for the
/// sizes the suites use, so this is "the same bytes", not "close".
bool same_bytes(double counted, double stated);

/// Generates and verifies one call. Returns "" when the schedule verified, "n/a" when the
/// algorithm's constraints exclude the call, or the failure text.
std::string verify_call(const algorithms::algorithm& a, const algorithms::call& c,
                        schedule::schedule_stats* stats = nullptr);

/// verify_call() that fails the test with the failure text; returns the counted stats.
schedule::schedule_stats expect_verifies(const algorithms::algorithm& a, const algorithms::call& c);

/// The generated schedule; fails the test when generation fails.
schedule::schedule generate_ok(const algorithms::algorithm& a, const algorithms::call& c);

/// The send steps of one rank, in schedule order.
std::vector<schedule::step> sends_of(const schedule::rank_schedule& rs);

/// The key of the directed pair from → to in schedule_stats::pair_bytes.
uint64_t pair_key(int from, int to);

/// Generates and verifies one call with per-pair byte counts; fails the test on an error.
schedule::schedule_stats verify_pairs(const algorithms::algorithm& a, const algorithms::call& c);

/// Verifies `c` and checks the verifier's counts against predict() with M = `bytes` under
/// both port models: rounds == n_alpha, edge_bytes == per-edge n_beta·M and port_bytes ==
/// single-port n_beta·M (same_bytes). Fails the test with both sides in the message;
/// returns the counted stats.
schedule::schedule_stats expect_counts_equal_stated(const algorithms::algorithm& a,
                                                    const algorithms::call& c, double bytes);

/// A per-edge cost query for `coll` at N = nranks and M = bytes on star:N.
algorithms::cost_query cost_query_at(schedule::collective coll, int nranks, double bytes = 1e6);

/// predict() at N = nranks (M = 1e6 bytes, per-edge) states n_alpha exactly and n_beta to
/// 1e-12; fails the test otherwise.
void expect_stated_cost(const algorithms::algorithm& a, int nranks, double n_alpha, double n_beta);

/// Channels run the algorithm on slices with stacked scratch (registry.cc): calls with 2 and
/// 3 channels on N ∈ {2, 3, 4, 6, 8, 12} (count 1001, star:N) verify.
void expect_verifies_with_channels(const algorithms::algorithm& a);

/// The rank counts of the issue: 1..17, 24, 32, 64.
std::vector<int> standard_ranks();
/// The lattice shapes of the issue.
std::vector<std::string> standard_lattices();
/// 1..last, then `more`: every small N and a few larger ones for the closed-form checks.
std::vector<int> ranks_up_to(int last, const std::vector<int>& more = {});

/// The sweep: N ∈ ranks × counts {0, 1, N-1, N, big} × roots {0, N-1, middle},
/// on star:N (and on `lattices` when the algorithm is applicable there).
sweep_result sweep(const algorithms::algorithm& a, const std::vector<int>& ranks, int64_t big,
                   const std::vector<std::string>& lattices = {});

/// The calls sweep() makes per shape: 5 counts × 3 roots.
constexpr int sweep_calls_per_shape = 5 * 3;

/// Where a suite expects its algorithm to apply.
enum class applies {
    everywhere,     // no call of the sweep is not-applicable
    lattices_only,  // exactly the star:N calls are not-applicable; every lattice call verifies
};

/// Runs sweep() over standard_ranks() with big count 1000003 and fails the test on the first
/// failure, or when the counts differ from `where` (everywhere: more than `min_verified`
/// calls verified).
void expect_clean_sweep(const algorithms::algorithm& a,
                        const std::vector<std::string>& lattices = standard_lattices(),
                        applies where = applies::everywhere, int min_verified = 300);

}  // namespace loom::test
