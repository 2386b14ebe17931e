// SPDX-License-Identifier: Apache-2.0
// Internal to fabric/sim: a rank's steps compiled into what the event loop needs, 28 bytes a
// step with its dependents inline, so that a 4096-rank ring all-reduce (67 million steps)
// fits in about 2 GiB (a schedule::step is 64 bytes, plus its dependency list, and keeps
// regions the simulator never reads) and one event touches one cache line per rank.
//
// Nomenclature: an "op" is a compiled step; its "dependents" are the later steps of the
// same rank that list it as a dependency (the reverse of step.hh's lists, so a completion
// can wake them); its "seq" is k for the k-th send to (or receive from) the same peer with
// the same tag, the matching rule of step.hh. Up to two dependents at most 65535 steps
// ahead are kept in the op itself (the generators' chains); more go to a per-rank overflow
// list. Ops live in an arena of 2 MiB-aligned chunks marked for transparent huge pages: the
// loop jumps between thousands of ranks, and 4 KiB pages would make every jump a TLB miss.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.hh"
#include "schedule/schedule.hh"

namespace loom::sim::detail {

/// op::flags: bit 0 done, bits 1..3 the gate that started it (sim.hh), bit 4 the transfer
/// has started, bit 5 the dependents are in the overflow list, bit 6 a link held it back
/// after that (tag: the blocker record).
constexpr uint8_t op_done     = 1;
constexpr uint8_t op_started  = 16;
constexpr uint8_t op_overflow = 32;
constexpr uint8_t op_link     = 64;
constexpr int gate_shift      = 1;
constexpr uint8_t gate_mask   = 7 << gate_shift;

struct op {
    int32_t peer;      // transfers: the peer; inc_*: contributors; else -1
    uint32_t count;    // elements; wide_count: look in rank_program::wide
    uint32_t tag;      // until started: the matching tag (inc_*: the slot); then, when
                       // a link held it back (op_link), the index of its blocker record
    uint32_t seq;      // until started: k of the matching rule; then the partner's step
    uint32_t pred;     // the dependency that completed last, or no_pred
    uint32_t deps;     // two 16-bit distances to dependents (0: none), or the overflow index
    uint16_t waiting;  // dependencies not yet done
    schedule::step_kind kind;
    uint8_t flags;
};
static_assert(sizeof(op) == 28, "an op is 28 bytes");

constexpr uint32_t wide_count = UINT32_MAX;
constexpr uint32_t no_pred    = UINT32_MAX;

/// Chunks of raw memory for ops, freed together.
class arena {
  public:
    arena()                        = default;
    arena(const arena&)            = delete;
    arena& operator=(const arena&) = delete;
    ~arena();
    /// `n` ops, uninitialised; nullptr if the memory is not there.
    op* take(size_t n);

  private:
    std::vector<void*> chunks_;
    char* next_  = nullptr;
    size_t left_ = 0;
};

struct rank_program {
    op* ops       = nullptr;
    uint32_t size = 0;
    std::vector<uint32_t> overflow;                  // per op: count, then the dependents
    std::vector<std::pair<uint32_t, int64_t>> wide;  // (op, count) for counts ≥ wide_count

    int64_t count_of(uint32_t i) const;
    template <class F>
    void for_each_dependent(uint32_t i, F&& f) const {
        const op& o = ops[i];
        if (!(o.flags & op_overflow)) {
            if (uint32_t d = o.deps & 0xffff) {
                f(i + d);
            }
            if (uint32_t d = o.deps >> 16) {
                f(i + d);
            }
            return;
        }
        const uint32_t* list = overflow.data() + o.deps;
        for (uint32_t k = 1; k <= list[0]; ++k) {
            f(list[k]);
        }
    }
};

/// Scratch reused across ranks while compiling.
struct compile_scratch {
    std::unordered_map<uint64_t, uint32_t> seq;
    std::vector<uint32_t> dependents;  // per op: count, then the far bit
};

/// Compiles one rank's steps into `out`, its ops taken from `mem`. Checks what the loop
/// relies on: dependencies point backwards, peers are other ranks, counts fit.
status compile_rank(const schedule::rank_schedule& rs, int nranks, arena& mem, rank_program& out,
                    compile_scratch& scratch);

/// "rank 3 step 7 (recv_reduce from 2)"
std::string describe_op(const rank_program& p, int rank, uint32_t i);

}  // namespace loom::sim::detail
