// The verification sweep shared by the algorithm suites: generate an algorithm's schedule
// for a call, verify it, and report the first failure with the whole call in the message.
#pragma once

#include <string>
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

/// Generates and verifies one call. Returns "" when the schedule verified, "n/a" when the
/// algorithm's constraints exclude the call, or the failure text.
std::string verify_call(const algorithms::algorithm& a, const algorithms::call& c,
                        schedule::schedule_stats* stats = nullptr);

/// The sweep: N ∈ ranks × counts {0, 1, N-1, N, big} × roots {0, N-1, middle},
/// on star:N (and on `lattices` when the algorithm is applicable there).
sweep_result sweep(const algorithms::algorithm& a, const std::vector<int>& ranks, int64_t big,
                   const std::vector<std::string>& lattices = {});

/// The rank counts of the issue: 1..17, 24, 32, 64.
std::vector<int> standard_ranks();
/// The lattice shapes of the issue.
std::vector<std::string> standard_lattices();

}  // namespace loom::test
