// SPDX-License-Identifier: Apache-2.0
// Internal to the verifier: the state of one symbolic run, shared by its passes.
#pragma once

#include <string>
#include <vector>

#include "symbolic.hh"
#include "verifier.hh"

namespace loom::schedule::detail {

struct step_ref {
    int rank;
    step_id index;
};

struct run_state {
    const schedule& s;
    verify_options options;
    // partner[r][i]: the matching step of a transfer (rank, index); {-1, 0} otherwise.
    std::vector<std::vector<step_ref>> partner;
    // dependents[r]: CSR of the steps that depend on each step.
    std::vector<std::vector<uint32_t>> dependents_begin;
    std::vector<std::vector<step_id>> dependents;
    // per slot tag: pushes expected / done, the round the last push landed, and its value.
    symbolic::set_table sets;
    std::vector<std::vector<symbolic::value_map>> buffers;  // [rank][input, output, scratch]

    explicit run_state(const schedule& sched, const verify_options& o) : s(sched), options(o) {}
};

/// "rank 3 step 7 (recv_reduce from 2)"
std::string describe_step(const schedule& s, int rank, step_id index);
/// "out[12]"
std::string describe_element(buffer_id b, int64_t pos);

status check_structure(const schedule& s);
status match_transfers(run_state& st);
status check_races(const schedule& s);
status check_outputs(run_state& st);

}  // namespace loom::schedule::detail
