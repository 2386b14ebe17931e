// SPDX-License-Identifier: Apache-2.0
// The names loom-bench reads and prints: collectives as loom calls them, types and ops as
// nccl-tests prints them (its parsers key on them), loom's own type names accepted too.
#include "bench.hh"

namespace loom::bench {
namespace {

template <class T>
struct named {
    const char* name;
    T value;
};

// The name of `value` in `table` (the first one), "?" when it has none.
template <class T, size_t N>
const char* name_in(const named<T> (&table)[N], T value) {
    for (const auto& n : table) {
        if (n.value == value) {
            return n.name;
        }
    }
    return "?";
}

template <class T, size_t N>
bool find_in(const named<T> (&table)[N], std::string_view text, T* out) {
    for (const auto& n : table) {
        if (text == n.name) {
            *out = n.value;
            return true;
        }
    }
    return false;
}

constexpr named<loom_collective_t> collectives[] = {
    {"allreduce", LOOM_ALLREDUCE}, {"broadcast", LOOM_BROADCAST},
    {"reduce", LOOM_REDUCE},       {"reduce_scatter", LOOM_REDUCE_SCATTER},
    {"allgather", LOOM_ALLGATHER}, {"alltoall", LOOM_ALLTOALL},
    {"sendrecv", LOOM_SENDRECV},
};

// nccl-tests' names first (what is printed), in its order; loom's spellings after.
constexpr named<loom_dtype_t> dtypes[] = {
    {"int8", LOOM_INT8},         {"uint8", LOOM_UINT8},     {"int32", LOOM_INT32},
    {"uint32", LOOM_UINT32},     {"int64", LOOM_INT64},     {"uint64", LOOM_UINT64},
    {"half", LOOM_FLOAT16},      {"float", LOOM_FLOAT32},   {"double", LOOM_FLOAT64},
    {"bfloat16", LOOM_BFLOAT16}, {"float16", LOOM_FLOAT16}, {"float32", LOOM_FLOAT32},
    {"float64", LOOM_FLOAT64},
};
constexpr size_t printed_dtypes = 10;

constexpr named<loom_op_t> ops[] = {
    {"sum", LOOM_SUM}, {"prod", LOOM_PROD}, {"max", LOOM_MAX}, {"min", LOOM_MIN}, {"avg", LOOM_AVG},
};

}  // namespace

const char* const collective_list =
    "allreduce, broadcast, reduce, reduce_scatter, allgather, alltoall, sendrecv; or calibrate";
const char* const dtype_list =
    "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16 (also float16, "
    "float32, float64), or all";
const char* const op_list = "sum, prod, max, min, avg, or all";

const char* collective_name(loom_collective_t c) {
    return name_in(collectives, c);
}

const char* dtype_name(loom_dtype_t d) {
    return name_in(dtypes, d);
}

const char* op_name(loom_op_t op) {
    return name_in(ops, op);
}

bool collective_named(std::string_view text, loom_collective_t* out) {
    return find_in(collectives, text, out);
}

bool dtype_named(std::string_view text, loom_dtype_t* out) {
    return find_in(dtypes, text, out);
}

bool op_named(std::string_view text, loom_op_t* out) {
    return find_in(ops, text, out);
}

std::vector<loom_dtype_t> all_dtypes() {
    std::vector<loom_dtype_t> out;
    for (size_t i = 0; i < printed_dtypes; ++i) {
        out.push_back(dtypes[i].value);
    }
    return out;
}

std::vector<loom_op_t> all_ops() {
    std::vector<loom_op_t> out;
    for (const auto& n : ops) {
        out.push_back(n.value);
    }
    return out;
}

bool reduces(loom_collective_t c) {
    return c == LOOM_ALLREDUCE || c == LOOM_REDUCE || c == LOOM_REDUCE_SCATTER;
}

bool rooted(loom_collective_t c) {
    return c == LOOM_BROADCAST || c == LOOM_REDUCE;
}

bool has_in_place(loom_collective_t c) {
    // loom.h's in-place convention is per call; a send and a receive on one buffer race
    // (the send may read what the receive already wrote), so sendrecv has none.
    return c != LOOM_SENDRECV;
}

}  // namespace loom::bench
