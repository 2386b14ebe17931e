// SPDX-License-Identifier: Apache-2.0
// Symbolic values for the verifier: what each element of each buffer holds, as regions.
//
// A segment [start, end) of a buffer holds, at every position p in it, the reduction over
// a SET of ranks r of input_r[p + shift]. One segment therefore describes a whole interval
// of elements, so a million-element buffer is a handful of segments and the verifier's cost
// follows the number of steps, not the number of elements. Sets of ranks are interned
// (an id per distinct set, kept as sorted disjoint rank intervals) and their unions are
// memoised; a union of overlapping sets is a contribution counted twice.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom::schedule::symbolic {

using set_id                  = uint32_t;
constexpr set_id undefined    = 0;  // never written: an element without a value
constexpr set_id double_count = UINT32_MAX;

/// Interned sets of contributing ranks.
class set_table {
  public:
    set_table();
    set_id singleton(int rank);
    set_id full(int nranks);  // {0 .. nranks-1}
    /// The union, or double_count if a rank is in both.
    set_id unite(set_id a, set_id b);
    /// A rank that is in both sets (for the message when unite() says double_count).
    int common_rank(set_id a, set_id b) const;
    /// "{0-3,5}"
    std::string describe(set_id id) const;

  private:
    using intervals = std::vector<std::pair<int, int>>;  // sorted, disjoint [lo, hi)
    set_id intern(intervals&& iv);
    std::vector<intervals> sets_;
    std::unordered_map<std::string, set_id> index_;
    std::unordered_map<uint64_t, set_id> unions_;
};

struct segment {
    int64_t end;
    int64_t shift;
    set_id set;
};

/// A piece of a region's contents, positions relative to the region's start: element q
/// holds the reduction over `set` of input_r[q + rel_shift].
struct piece {
    int64_t begin, end;
    int64_t rel_shift;
    set_id set;
};

/// One buffer of one rank: start -> segment, covering [0, size) without gaps.
class value_map {
  public:
    void reset(int64_t size, set_id initial);
    /// The contents of [offset, offset + count) as pieces relative to offset.
    void read(int64_t offset, int64_t count, std::vector<piece>* out) const;
    /// Overwrites [offset, ...) with pieces (relative to offset).
    void write(int64_t offset, const std::vector<piece>& pieces);
    /// The segment that contains position p.
    const segment& at(int64_t p, int64_t* start) const;
    size_t segments() const { return map_.size(); }

  private:
    void split_at(int64_t p);
    void coalesce_around(int64_t lo, int64_t hi);
    std::map<int64_t, segment> map_;
};

/// Combines two piece lists over the same relative range (a ⊕ b). On failure returns false
/// and fills `bad_pos` (relative) and `why`.
bool combine(set_table& sets, const std::vector<piece>& a, const std::vector<piece>& b,
             std::vector<piece>* out, int64_t* bad_pos, std::string* why);

}  // namespace loom::schedule::symbolic
