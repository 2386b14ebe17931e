// SPDX-License-Identifier: Apache-2.0
// A schedule: the plain-data form of one collective call, for every rank
// (docs/architecture.md#executors). It prints and parses as text and JSON, the verifier proves it,
// the engine runs it and the simulator times it; none of them needs anything beyond this header.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "base/status.hh"
#include "collective.hh"
#include "step.hh"

namespace loom::schedule {

/// What the schedule computes (the call), shared by all ranks.
struct schedule_info {
    collective coll     = collective::allreduce;
    int nranks          = 1;
    int64_t count       = 0;  // elements, see collective.hh
    int root            = 0;  // broadcast/reduce root; sendrecv source
    int peer            = 0;  // sendrecv destination
    uint32_t dtype_size = 4;  // bytes per element (only the statistics use it)
    std::string algorithm;    // generator name, informational
    std::string topology;     // e.g. "torus:4x4", informational
    int segments = 1;         // pipeline segments P the generator used
    int channels = 1;         // independent channels the generator used
    // The in-network steps (inc_push/inc_pull) run on the node's flat shared segment
    // (algorithms/flat.cc) rather than an aggregation node: the engine hands them to its
    // node-local offload. Set from algorithm::node_local; never in text or JSON forms.
    bool node_local = false;
};

/// Elements in each buffer of `rank` for this call (scratch is per-rank, see rank_schedule).
int64_t input_count(const schedule_info& info, int rank);
int64_t output_count(const schedule_info& info, int rank);
/// The payload M in bytes used by the cost model: the vector each rank holds (for
/// alltoall the whole send buffer, N * count elements; for allgather the gathered vector).
double payload_bytes(const schedule_info& info);

struct rank_schedule {
    int rank              = 0;
    int64_t scratch_count = 0;  // elements of scratch this rank needs
    std::vector<step> steps;
    std::vector<step_id> deps;  // every step's dependencies, concatenated

    const step_id* deps_of(const step& s) const { return deps.data() + s.first_dep; }
};

struct schedule {
    schedule_info info;
    std::vector<rank_schedule> ranks;  // ranks[r].rank == r
};

/// Appends steps to one rank's list. Every method returns the new step's id, to be used
/// in later steps' dependency lists; `no_step` entries in a list are skipped, so "depend on
/// the previous step if there is one" needs no branch in the generator.
class builder {
  public:
    explicit builder(rank_schedule& out) : out_(out) {}
    /// A step's dependencies: a braced list, or a vector for generators that collect them.
    /// Read before the call returns, so a temporary list is fine.
    class deps_list {
      public:
        deps_list() = default;
        deps_list(std::initializer_list<step_id> ids) : ids_(ids.begin(), ids.size()) {}
        deps_list(const std::vector<step_id>& ids) : ids_(ids) {}
        auto begin() const { return ids_.begin(); }
        auto end() const { return ids_.end(); }

      private:
        std::span<const step_id> ids_;
    };

    step_id send(int peer, region src, deps_list deps = {}, uint32_t tag = 0);
    step_id recv(int peer, region dst, deps_list deps = {}, uint32_t tag = 0);
    step_id recv_reduce(int peer, region dst, region src, deps_list deps = {}, uint32_t tag = 0);
    step_id recv_copy(int peer, region dst, region aux, deps_list deps = {}, uint32_t tag = 0);
    step_id local_reduce(region dst, region src, region aux, deps_list deps = {});
    step_id local_copy(region dst, region src, deps_list deps = {});
    step_id inc_push(region src, uint32_t slot, int contributors, deps_list deps = {});
    step_id inc_pull(region dst, uint32_t slot, int contributors, deps_list deps = {});

    /// Adds a step as it stands (parsers, channel splitting).
    step_id add(step s, deps_list deps);
    /// Grows the rank's scratch to at least `count` elements.
    void need_scratch(int64_t count);
    step_id size() const { return static_cast<step_id>(out_.steps.size()); }
    int rank() const { return out_.rank; }

  private:
    rank_schedule& out_;
};

/// The header's informational names (algorithm, topology) as both parsers accept them:
/// 1 to max_name_length printable ASCII characters, no space, so that every printed form
/// (text words, JSON strings, tables) holds them unchanged.
constexpr size_t max_name_length = 256;
bool is_plain_name(std::string_view name);

/// What both parsers require of the numbers they read, beyond their types: a header with
/// ranks >= 1, count, scratch and region offsets in [0, max_region_count] (so a region's end
/// cannot overflow), dtype_size, segments and channels >= 1; a step's peer >= -1 (-1: none)
/// and at most max_step_deps dependencies. Structure (ranks listed, peers in range, deps
/// earlier) is the verifier's. `where` starts the message ("schedule text line 7").
constexpr size_t max_step_deps = UINT16_MAX;
status check_parsed_info(const schedule_info& info, const std::string& where);
status check_parsed_step(const step& s, size_t ndeps, const std::string& where);
status check_parsed_region(const region& r, const std::string& where);

/// Text form: readable, one step per line; parse(print(s)) == s.
std::string to_text(const schedule& s);
result<schedule> parse_text(std::string_view text);
/// JSON form (format "loom-schedule", version 1): for tools and hand-written schedules.
std::string to_json(const schedule& s, int indent = -1);
result<schedule> parse_json(std::string_view text);
/// Detects the form from the first non-blank character ('{' is JSON).
result<schedule> parse_any(std::string_view text);

bool operator==(const step& a, const step& b);
/// Deep equality of two schedules (steps and dependencies), for round-trip tests.
bool equal(const schedule& a, const schedule& b);

}  // namespace loom::schedule
