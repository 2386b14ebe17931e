// loom-bench: collective bandwidth and latency under loomrun, modelled on nccl-tests
// (all_reduce_perf and friends). The command line lives in options.cc, the rest in main.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/loom.h"

namespace loom::bench {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // a loom call failed, or -c found wrong elements
constexpr int exit_bad_args = 2;  // bad command line: one line "loom-bench: <reason>"

struct options {
    loom_collective_t coll = LOOM_ALLREDUCE;
    uint64_t min_bytes     = 8;
    uint64_t max_bytes     = 64ull << 20;
    uint64_t factor        = 2;
    int iters              = 20;
    int warmup             = 5;
    bool check             = false;
    loom_dtype_t dtype     = LOOM_FLOAT32;
    loom_op_t op           = LOOM_SUM;
    int root               = 0;
    std::string algo;  // empty: LOOM_ALGO, else loom's default rule
};

enum class parse_outcome { run, help, fail };

/// Parses argv (argv[0] is the program). On `fail`, *error holds the reason (one line).
parse_outcome parse_options(int argc, char** argv, options* out, std::string* error);

/// The usage text printed by --help.
const char* usage_text();

/// "allreduce", "float32", "sum" … for the table and the header.
const char* collective_name(loom_collective_t c);
const char* dtype_name(loom_dtype_t d);
const char* op_name(loom_op_t op);

/// Whether the primitive takes a reduction operator / a root.
bool reduces(loom_collective_t c);
bool rooted(loom_collective_t c);

}  // namespace loom::bench
