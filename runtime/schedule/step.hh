// SPDX-License-Identifier: Apache-2.0
// The closed step vocabulary of a schedule (docs/architecture.md#rule-step-vocabulary).
//
// A schedule gives each rank an ordered list of steps. A step reads and writes regions
// (buffer, offset and count in ELEMENTS) and may name a peer. Steps start when their
// dependencies are done; list order alone implies nothing, so independent chains of steps
// express channels and pipelining. Dependencies point backwards (to earlier indices), so a
// rank's list is always in a valid topological order.
//
//   send         src ──► peer
//   recv         peer ──► dst                     (overwrite)
//   recv_reduce  dst = src ⊕ (peer's message)      (src may equal dst: accumulate in place)
//   recv_copy    peer ──► dst, and the same data into aux (land and keep a second copy)
//   local_reduce dst = src ⊕ aux
//   local_copy   dst = src
//   inc_push     src ──► aggregation slot `tag`    (in-network: contribute to a reduction)
//   inc_pull     aggregation slot `tag` ──► dst    (in-network: receive the reduced result)
//
// Matching: the k-th send from rank a to rank b with tag t meets the k-th receive (recv,
// recv_reduce or recv_copy) posted by b from a with tag t. Messages of one (a, b, t) never
// overtake each other; different tags are independent (one per channel).
//
// In-network steps: all inc_push steps with the same tag, across ranks, form one aggregation
// (their `peer` holds the number of contributors every rank expects); every inc_pull with that
// tag receives the reduction of all of them.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace loom::schedule {

enum class step_kind : uint8_t {
    send,
    recv,
    recv_reduce,
    recv_copy,
    local_reduce,
    local_copy,
    inc_push,
    inc_pull,
};
constexpr int step_kind_count = 8;

enum class buffer_id : uint8_t { none, input, output, scratch };

/// A contiguous range of elements in one of a rank's buffers. 16 bytes: the count and the
/// buffer share a word (counts up to 2^55 elements), because a 4096-rank schedule holds
/// tens of millions of regions.
struct region {
    int64_t offset     = 0;
    int64_t count : 56 = 0;
    buffer_id buf : 8  = buffer_id::none;

    int64_t end() const { return offset + count; }
    bool operator==(const region&) const = default;
};

/// The largest count a region can hold (the width of region::count).
constexpr int64_t max_region_count = (int64_t{1} << 55) - 1;

inline region in(int64_t offset, int64_t count) {
    return {offset, count, buffer_id::input};
}
inline region out(int64_t offset, int64_t count) {
    return {offset, count, buffer_id::output};
}
inline region tmp(int64_t offset, int64_t count) {
    return {offset, count, buffer_id::scratch};
}

using step_id             = uint32_t;
constexpr step_id no_step = UINT32_MAX;  // "no dependency": ignored in dependency lists

/// 64 bytes: one cache line per step.
struct step {
    step_kind kind;
    uint8_t reserved   = 0;
    uint16_t ndeps     = 0;
    uint32_t tag       = 0;
    int32_t peer       = -1;  // rank for send/recv*; contributor count for inc_*; else -1
    uint32_t first_dep = 0;   // index into rank_schedule::deps
    region dst{};             // written by recv*, local_*, inc_pull
    region src{};             // read by send, recv_reduce, local_*, inc_push
    region aux{};             // recv_copy's second destination; local_reduce's 2nd operand
};

/// A step's regions with their names in both printed forms, in printing order.
inline std::array<std::pair<const char*, const region*>, 3> step_regions(const step& s) {
    return {{{"dst", &s.dst}, {"src", &s.src}, {"aux", &s.aux}}};
}
/// The region a printed form names `key` ("dst", "src", "aux"), else nullptr.
region* named_region(step& s, std::string_view key);

bool is_receive(step_kind k);   // recv, recv_reduce, recv_copy
bool is_transfer(step_kind k);  // send or a receive
bool is_inc(step_kind k);       // inc_push, inc_pull
std::string_view step_kind_name(step_kind k);
bool parse_step_kind(std::string_view name, step_kind* out);
std::string_view buffer_name(buffer_id b);  // "in", "out", "tmp"
bool parse_buffer(std::string_view name, buffer_id* out);

}  // namespace loom::schedule

static_assert(sizeof(loom::schedule::region) == 16, "a region is two words");
static_assert(sizeof(loom::schedule::step) == 64, "a step is one cache line");
