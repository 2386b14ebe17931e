// loom-bench's command line, nccl-tests style: `loom-bench COLLECTIVE [flags]`. Hand-rolled
// (a dozen flags) so that every kind of bad input gets one line saying what is allowed.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "bench.hh"

namespace loom::bench {
namespace {

template <class T>
struct named {
    const char* name;
    T value;
};

// The name of `value` in `table`, "?" when it has none.
template <class T, size_t N>
const char* name_in(const named<T> (&table)[N], T value) {
    for (const auto& n : table) {
        if (n.value == value) {
            return n.name;
        }
    }
    return "?";
}

// The value `text` names in `table`; false when it names none.
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
constexpr const char* collective_list =
    "allreduce, broadcast, reduce, reduce_scatter, allgather, alltoall, sendrecv; or calibrate";

// The types whose inputs -c can fill with small integers and check exactly.
constexpr named<loom_dtype_t> dtypes[] = {
    {"float32", LOOM_FLOAT32}, {"float64", LOOM_FLOAT64}, {"int8", LOOM_INT8},
    {"uint8", LOOM_UINT8},     {"int32", LOOM_INT32},     {"uint32", LOOM_UINT32},
    {"int64", LOOM_INT64},     {"uint64", LOOM_UINT64},
};
constexpr const char* dtype_list = "float32, float64, int8, uint8, int32, uint32, int64, uint64";

constexpr named<loom_op_t> ops[] = {
    {"sum", LOOM_SUM}, {"prod", LOOM_PROD}, {"min", LOOM_MIN}, {"max", LOOM_MAX}, {"avg", LOOM_AVG},
};
constexpr const char* op_list = "sum, prod, min, max, avg";

constexpr uint64_t max_size = 1ull << 40;  // 1 TiB: far beyond memory, short of overflow

// "8", "64K", "64M", "1G" (binary multiples, as nccl-tests). No sign, no fraction.
bool parse_size(std::string_view text, uint64_t* out) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
        ++digits;
    }
    if (digits == 0 || digits > 15) {
        return false;
    }
    uint64_t value        = std::strtoull(std::string(text.substr(0, digits)).c_str(), nullptr, 10);
    std::string_view unit = text.substr(digits);
    int shift             = 0;
    if (!unit.empty()) {
        constexpr std::string_view units = "KMGkmg";  // 2^10, 2^20, 2^30 in either case
        size_t k = unit.size() == 1 ? units.find(unit[0]) : std::string_view::npos;
        if (k == std::string_view::npos) {
            return false;
        }
        shift = 10 * static_cast<int>(k % 3 + 1);
    }
    if (value > (max_size >> shift)) {
        return false;
    }
    *out = value << shift;
    return true;
}

bool parse_int(std::string_view text, long lo, long hi, long* out) {
    if (text.empty() || text.size() > 18) {
        return false;
    }
    std::string s(text);
    char* end = nullptr;
    errno     = 0;
    long v    = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

}  // namespace

const char* usage_text() {
    return "Usage: loomrun -n N [--transport shm|tcp] -- loom-bench COLLECTIVE [flags]\n"
           "       loomrun -n N -- loom-bench calibrate [--thorough] [--json FILE]\n"
           "Measures a loom collective as nccl-tests does. For each size: warm-up calls, then\n"
           "ITERS times a barrier and one timed call; an iteration lasts from the last rank\n"
           "entering the call to the last rank leaving it (CLOCK_MONOTONIC, shared by the\n"
           "ranks of one host); time = the median (p50) over iterations.\n"
           "Collectives: allreduce, broadcast, reduce, reduce_scatter, allgather, alltoall,\n"
           "sendrecv (rank r sends to r+1 and receives from r-1, modulo N)\n"
           "  -b, --minbytes SIZE      smallest size (default 8); K, M, G = 2^10, 2^20, 2^30\n"
           "  -e, --maxbytes SIZE      largest size (default 64M)\n"
           "  -f, --stepfactor F       multiply the size by F (integer >= 2, default 2)\n"
           "  -n, --iters N            timed calls per size (default 20)\n"
           "  -w, --warmup_iters N     untimed calls per size first (default 5)\n"
           "  -c, --check [0|1]        check every result exactly; #wrong counts bad elements\n"
           "  -d, --dtype TYPE         float32 (default), float64, int8, uint8, int32, uint32,\n"
           "                           int64, uint64\n"
           "  -o, --op OP              sum (default), prod, min, max, avg\n"
           "  -r, --root R             root of broadcast and reduce (default 0)\n"
           "      --algo auto|NAME|all auto (default): LOOM_ALGO, else the tuner; NAME: that\n"
           "                           algorithm; all: every applicable one, then a table\n"
           "      --inplace            run in place (loom.h: sendbuf == recvbuf; allgather:\n"
           "                           sendbuf = recvbuf + this rank's block); not sendrecv\n"
           "      --csv FILE           one row per measured point (rank 0 writes)\n"
           "      --json FILE          the run and its rows as JSON (also a --baseline file)\n"
           "      --plot FILE.png      time against size, log-log, through gnuplot\n"
           "      --baseline FILE      compare p50 with an earlier --json; exit 3 when a point\n"
           "                           is slower by more than the tolerance\n"
           "      --tolerance PCT      for --baseline (default 10)\n"
           "      --quiet              no progress line on a terminal's stderr\n"
           "  -h, --help               this text\n"
           "calibrate: measures alpha, BW and the reduction throughput (loom_comm_calibrate),\n"
           "  --thorough for the full pass; rank 0 prints them, --json FILE also writes them.\n"
           "Sizes are bytes of the per-rank buffer, as nccl-tests: reduce_scatter, allgather\n"
           "and alltoall round the element count down to a multiple of N. busbw = algbw x\n"
           "2(N-1)/N (allreduce), (N-1)/N (reduce_scatter, allgather, alltoall), 1 (broadcast,\n"
           "reduce, sendrecv). GB/s is 10^9 bytes per second.\n"
           "Exit status: 0 ok; 1 a call failed or -c found wrong elements; 2 bad arguments;\n"
           "3 --baseline found a slower point.\n";
}

const char* collective_name(loom_collective_t c) {
    return name_in(collectives, c);
}

const char* dtype_name(loom_dtype_t d) {
    return name_in(dtypes, d);
}

const char* op_name(loom_op_t op) {
    return name_in(ops, op);
}

bool reduces(loom_collective_t c) {
    return c == LOOM_ALLREDUCE || c == LOOM_REDUCE || c == LOOM_REDUCE_SCATTER;
}

bool rooted(loom_collective_t c) {
    return c == LOOM_BROADCAST || c == LOOM_REDUCE;
}

namespace {

// `loom-bench calibrate [--thorough] [--json FILE]`: argv[1] is "calibrate".
parse_outcome parse_calibrate(int argc, char** argv, options* out, std::string* error) {
    options o;
    o.calibrate = true;
    for (int i = 2; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            return parse_outcome::help;
        }
        if (arg == "--thorough") {
            o.thorough = true;
        } else if (arg == "--json" || arg.substr(0, 7) == "--json=") {
            std::string_view value = arg.size() > 6 ? arg.substr(7)
                                     : i + 1 < argc ? std::string_view(argv[++i])
                                                    : std::string_view();
            if (value.empty()) {
                *error = "calibrate: --json needs a file name";
                return parse_outcome::fail;
            }
            o.json_path = std::string(value);
        } else {
            *error = "calibrate: unexpected argument '" + std::string(arg) +
                     "' (allowed: --thorough, --json FILE)";
            return parse_outcome::fail;
        }
    }
    *out = o;
    return parse_outcome::run;
}

}  // namespace

parse_outcome parse_options(int argc, char** argv, options* out, std::string* error) {
    options o;
    auto fail = [&](std::string reason) {
        *error = std::move(reason);
        return parse_outcome::fail;
    };
    if (argc < 2) {
        return fail(std::string("a collective is required (") + collective_list + ")");
    }
    std::string_view first = argv[1];
    if (first == "-h" || first == "--help") {
        return parse_outcome::help;
    }
    if (first == "calibrate") {
        return parse_calibrate(argc, argv, out, error);
    }
    if (!find_in(collectives, first, &o.coll)) {
        if (!first.empty() && first[0] == '-') {
            return fail(std::string("a collective must come first (") + collective_list + ")");
        }
        return fail("unknown collective '" + std::string(first) + "' (allowed: " + collective_list +
                    ")");
    }
    bool root_given = false, tolerance_given = false;
    for (int i = 2; i < argc; ++i) {
        std::string_view arg  = argv[i];
        std::string_view flag = arg, inline_value;
        bool has_inline       = false;
        if (arg.substr(0, 2) == "--") {
            size_t eq = arg.find('=');
            if (eq != std::string_view::npos) {
                flag         = arg.substr(0, eq);
                inline_value = arg.substr(eq + 1);
                has_inline   = true;
            }
        }
        if (flag == "-h" || flag == "--help") {
            return parse_outcome::help;
        }
        if (flag == "-c" || flag == "--check") {
            // nccl-tests spells it "-c 1"; a bare -c means the same.
            std::string_view v = has_inline ? inline_value
                                 : (i + 1 < argc && (std::strcmp(argv[i + 1], "0") == 0 ||
                                                     std::strcmp(argv[i + 1], "1") == 0))
                                     ? std::string_view(argv[++i])
                                     : std::string_view("1");
            if (v != "0" && v != "1") {
                return fail(std::string(flag) + " '" + std::string(v) + "': expected 0 or 1");
            }
            o.check = v == "1";
            continue;
        }
        if (flag == "--inplace" || flag == "--quiet") {
            if (has_inline) {
                return fail(std::string(flag) + " takes no value");
            }
            (flag == "--inplace" ? o.inplace : o.quiet) = true;
            continue;
        }
        static constexpr const char* valued[] = {
            "-b",    "--minbytes", "-e",         "--maxbytes",     "-f",     "--stepfactor",
            "-n",    "--iters",    "-w",         "--warmup_iters", "-d",     "--dtype",
            "-o",    "--op",       "-r",         "--root",         "--algo", "--json",
            "--csv", "--plot",     "--baseline", "--tolerance"};
        bool known = false;
        for (const char* v : valued) {
            known = known || flag == v;
        }
        if (!known) {
            if (!flag.empty() && flag[0] == '-') {
                return fail("unknown flag '" + std::string(flag) + "' (see --help)");
            }
            return fail("unexpected argument '" + std::string(arg) + "' (see --help)");
        }
        if (!has_inline && i + 1 >= argc) {
            return fail(std::string(flag) + " needs a value");
        }
        std::string_view value = has_inline ? inline_value : std::string_view(argv[++i]);
        auto bad               = [&](const std::string& expected) {
            return fail(std::string(flag) + " '" + std::string(value) + "': expected " + expected);
        };
        long number = 0;
        if (flag == "-b" || flag == "--minbytes" || flag == "-e" || flag == "--maxbytes") {
            uint64_t size = 0;
            if (!parse_size(value, &size)) {
                return bad("a size in bytes up to 1T, optionally with K, M or G (e.g. 64M)");
            }
            (flag == "-b" || flag == "--minbytes" ? o.min_bytes : o.max_bytes) = size;
        } else if (flag == "-f" || flag == "--stepfactor") {
            if (!parse_int(value, 2, 1 << 20, &number)) {
                return bad("an integer factor >= 2");
            }
            o.factor = static_cast<uint64_t>(number);
        } else if (flag == "-n" || flag == "--iters") {
            if (!parse_int(value, 1, 1 << 24, &number)) {
                return bad("a number of iterations from 1 to 16777216");
            }
            o.iters = static_cast<int>(number);
        } else if (flag == "-w" || flag == "--warmup_iters") {
            if (!parse_int(value, 0, 1 << 30, &number)) {
                return bad("a number of iterations >= 0");
            }
            o.warmup = static_cast<int>(number);
        } else if (flag == "-r" || flag == "--root") {
            if (!parse_int(value, 0, 1 << 30, &number)) {
                return bad("a rank >= 0");
            }
            o.root     = static_cast<int>(number);
            root_given = true;
        } else if (flag == "-d" || flag == "--dtype") {
            if (!find_in(dtypes, value, &o.dtype)) {
                return bad(std::string("one of ") + dtype_list);
            }
        } else if (flag == "-o" || flag == "--op") {
            if (!find_in(ops, value, &o.op)) {
                return bad(std::string("one of ") + op_list);
            }
        } else if (flag == "--algo") {
            if (value.empty() || value.find_first_of(" \t;=") != std::string_view::npos) {
                return bad("auto, all or an algorithm name (loom-sim algorithms lists them)");
            }
            o.mode = value == "auto"  ? algo_mode::automatic
                     : value == "all" ? algo_mode::all
                                      : algo_mode::named;
            o.algo = o.mode == algo_mode::named ? std::string(value) : std::string();
        } else if (flag == "--tolerance") {
            char* end = nullptr;
            std::string text(value);
            double pct = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !(pct >= 0 && pct <= 1e6)) {
                return bad("a percentage >= 0 (e.g. 10)");
            }
            o.tolerance_pct = pct;
            tolerance_given = true;
        } else {  // --json, --csv, --plot, --baseline: a file name
            if (value.empty()) {
                return bad("a file name");
            }
            std::string path(value);
            if (flag == "--plot" && (path.size() < 5 || path.substr(path.size() - 4) != ".png")) {
                return bad("a file name ending in .png");
            }
            (flag == "--json"   ? o.json_path
             : flag == "--csv"  ? o.csv_path
             : flag == "--plot" ? o.plot_path
                                : o.baseline_path) = path;
        }
    }
    if (o.min_bytes == 0) {
        return fail("-b must be at least 1 byte");
    }
    if (o.min_bytes > o.max_bytes) {
        return fail("-b " + std::to_string(o.min_bytes) + " is larger than -e " +
                    std::to_string(o.max_bytes));
    }
    if (root_given && !rooted(o.coll)) {
        return fail(std::string("-r applies to broadcast and reduce, not ") +
                    collective_name(o.coll));
    }
    if (o.inplace && o.coll == LOOM_SENDRECV) {
        // loom.h's in-place convention is per call; a send and a receive on one buffer
        // race (the send may read what the receive already wrote), so there is none.
        return fail("--inplace: loom has no in-place send/recv (the send would race the receive)");
    }
    if (tolerance_given && o.baseline_path.empty()) {
        return fail("--tolerance applies to --baseline FILE");
    }
    *out = o;
    return parse_outcome::run;
}

}  // namespace loom::bench
