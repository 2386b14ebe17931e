// SPDX-License-Identifier: Apache-2.0
// The seven primitives, their element-count conventions and the block partition.
//
// `count` is always in elements:
//   broadcast, reduce, allreduce  the vector length; input and output hold `count`
//   reduce_scatter                the FULL vector length; rank r's output is block r
//   allgather                     the FULL vector length; rank r's input is block r
//   alltoall                      elements each rank sends to EACH rank (MPI sendcount);
//                                 input and output hold nranks * count
//   sendrecv                      rank `root` sends `count` elements to rank `peer`
// Blocks: a vector of `count` elements is cut into nranks blocks, the first count % nranks
// blocks one element longer (MPI's v-variant convention), so any count works, including
// count < nranks and count = 0.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom::schedule {

enum class collective : uint8_t {
    broadcast,
    reduce,
    allreduce,
    reduce_scatter,
    allgather,
    alltoall,
    sendrecv,
};
constexpr int collective_count = 7;

std::string_view collective_name(collective c);
bool parse_collective(std::string_view name, collective* out);
/// True for the primitives that combine values (reduce, allreduce, reduce_scatter).
bool is_reduction(collective c);
/// True for primitives with a root (broadcast, reduce, sendrecv's source).
bool has_root(collective c);

inline int64_t block_size(int64_t count, int nranks, int i) {
    return count / nranks + (i < count % nranks ? 1 : 0);
}
inline int64_t block_offset(int64_t count, int nranks, int i) {
    int64_t base = count / nranks, extra = count % nranks;
    return base * i + (i < extra ? i : extra);
}

}  // namespace loom::schedule
