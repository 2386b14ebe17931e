// SPDX-License-Identifier: Apache-2.0
// What rank 0 prints: the header, one nccl-tests row per measured point (nccl-tests' columns
// first, in its order, so scripts that read nccl-tests output read these; loom's own columns
// after), the --algo all comparison and the progress line.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench.hh"
#include "bootstrap/bootstrap_params.hh"
#include "comm/comm_params.hh"

namespace loom::bench {
namespace {

std::string fixed(double v, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    return text;
}

const char* algo_origin(const options& o) {
    switch (o.mode) {
        case algo_mode::named:
            return "--algo";
        case algo_mode::all:
            return "--algo all: every algorithm loom reports applicable, per size";
        default:
            return "auto: LOOM_ALGO, else the tuner (the algo column says which ran)";
    }
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u                                = 0;
    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        ++u;
    }
    return std::to_string(static_cast<unsigned long long>(bytes)) + " " + units[u];
}

namespace {

// nccl-tests' time format: two decimals below 100 us, one below 10 ms, none above.
std::string time_text(double us) {
    return fixed(us, us >= 10000 ? 0 : us >= 100 ? 1 : 2);
}

// One half's four columns: time, algbw, busbw, #wrong; N/A throughout when not measured.
std::string half_columns(const row* r) {
    char text[96];
    if (r == nullptr) {
        std::snprintf(text, sizeof text, "  %8s  %7s  %7s  %6s", "N/A", "N/A", "N/A", "N/A");
        return text;
    }
    std::string wrong = r->wrong < 0 ? "N/A" : std::to_string(static_cast<long long>(r->wrong));
    std::snprintf(text, sizeof text, "  %8s  %7.2f  %7.2f  %6s", time_text(r->time_us).c_str(),
                  r->algbw, r->busbw, wrong.c_str());
    return text;
}

std::string transport_text(int n, const std::string& carrier) {
    std::string transport = comm::params::transport.get();
    if (!transport.empty()) {
        return transport + " (LOOM_TRANSPORT)";
    }
    if (n == 1) {
        return "self (default for one rank)";
    }
    return carrier == "shm" ? std::string("shm (default: ranks on one host)")
                            : "a network transport (default: ranks on several hosts; "
                              "LOOM_LOG_LEVEL=info names it)";
}

std::string names_of(const std::vector<loom_dtype_t>& dtypes) {
    std::string out;
    for (loom_dtype_t d : dtypes) {
        out += (out.empty() ? "" : ",") + std::string(dtype_name(d));
    }
    return out;
}

std::string names_of(const std::vector<loom_op_t>& ops) {
    std::string out;
    for (loom_op_t op : ops) {
        out += (out.empty() ? "" : ",") + std::string(op_name(op));
    }
    return out;
}

}  // namespace

void print_header(const header_info& h) {
    const options& o = *h.o;
    // nccl-tests' first line, its fields named and ordered as there (its parsers read them).
    std::printf(
        "# nThread 1 nGpus 1 minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %d iters: "
        "%d agg iters: 1 validation: %d graph: 0\n",
        static_cast<unsigned long long>(o.min_bytes), static_cast<unsigned long long>(o.max_bytes),
        static_cast<unsigned long long>(o.factor > 1 ? o.factor : o.step_bytes),
        o.factor > 1 ? "factor" : "bytes", o.warmup, o.iters, o.check ? 1 : 0);
    std::printf("#\n");
    std::printf("# loom-bench %s, loom %s: N = %d ranks, transport %s\n", collective_name(o.coll),
                loom_version(), h.n, transport_text(h.n, h.carrier).c_str());
    std::printf("# algorithm: %s%s\n", algo_origin(o),
                o.mode == algo_mode::named ? (" " + o.algo).c_str() : "");
    std::printf("# dtype %s", names_of(o.dtypes).c_str());
    if (reduces(o.coll)) {
        std::printf(", op %s", names_of(o.ops).c_str());
    }
    if (rooted(o.coll)) {
        std::printf(", root %s", o.all_roots ? "all" : std::to_string(o.roots[0]).c_str());
    }
    std::printf("; %s\n", o.in_place && o.out_of_place ? "out of place and in place"
                          : o.in_place                 ? "in place only"
                                                       : "out of place only");
    if (o.timing == timing_mode::loop) {
        static constexpr const char* how[] = {"rank 0's", "the mean over ranks of the",
                                              "the minimum over ranks of the",
                                              "the maximum over ranks of the"};
        std::printf(
            "# time: a barrier, then %d calls back to back; time = %s mean per call (-a %d)\n",
            o.iters, how[static_cast<int>(o.average)], static_cast<int>(o.average));
    } else {
        std::printf(
            "# time: per iteration a barrier, then one call timed from the last rank entering\n"
            "#   to the last rank leaving; time = p50 (median) over iterations, p99 beside it\n");
    }
    std::printf(
        "# pred: loom's predicted time; sent(B)/rank: bytes a call handed to the transport,\n"
        "#   the maximum over ranks (loom_comm_traffic); '-' where loom cannot say\n");
    if (h.memcpy_gbps > 0) {
        std::printf("# memcpy bandwidth (rank 0, 64 MiB, best of 10): %.2f GB/s\n", h.memcpy_gbps);
    } else {
        std::printf("# memcpy bandwidth: not measured\n");
    }
    std::printf("#\n# Using devices\n");
    for (size_t r = 0; r < h.devices.size(); ++r) {
        std::printf("#  Rank %2zu Group  0 %s device  0 [cpu] loom %s\n", r, h.devices[r].c_str(),
                    transport_text(h.n, h.carrier).c_str());
    }
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %-36s  %-36s\n", "", "", "", "", "",
                "            out-of-place", "            in-place");
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s  %-19s  %9s  %9s  "
        "%12s\n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong", "algo", "pred", "p99", "sent");
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s  %-19s  %9s  %9s  "
        "%12s\n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
        "", "", "(us)", "(us)", "(B)/rank");
    std::fflush(stdout);
}

void print_row(const row* out_of_place, const row* in_place) {
    const row& r     = out_of_place != nullptr ? *out_of_place : *in_place;
    std::string pred = r.predicted_us < 0 ? "-" : fixed(r.predicted_us, 2);
    std::string p99  = r.p99_us < 0 ? "-" : fixed(r.p99_us, 2);
    std::string sent = r.sent_bytes < 0 ? "-" : fixed(r.sent_bytes, 0);
    std::printf("  %10llu  %12llu  %8s  %6s  %6d%s%s  %-19s  %9s  %9s  %12s\n",
                static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count),
                r.dtype.c_str(), r.op.c_str(), r.root, half_columns(out_of_place).c_str(),
                half_columns(in_place).c_str(), r.algo.empty() ? "-" : r.algo.c_str(), pred.c_str(),
                p99.c_str(), sent.c_str());
    std::fflush(stdout);
}

void print_trailer(const options& o, const std::vector<row>& rows) {
    uint64_t total_wrong = 0;
    double busbw_sum     = 0;
    for (const row& r : rows) {
        total_wrong += r.wrong > 0 ? static_cast<uint64_t>(r.wrong) : 0;
        busbw_sum += r.busbw;
    }
    std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(total_wrong),
                !o.check           ? "(not checked)"
                : total_wrong == 0 ? "OK"
                                   : "FAILED");
    std::printf("# Avg bus bandwidth    : %g \n",
                rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
    std::printf("#\n");
    std::fflush(stdout);
}

void print_comparison(const std::vector<row>& all) {
    // The first half, type, op and root measured: one figure per size and algorithm.
    std::vector<row> rows;
    for (const row& r : all) {
        const row& first = all.front();
        if (r.inplace == first.inplace && r.dtype == first.dtype && r.op == first.op &&
            r.root == first.root) {
            rows.push_back(r);
        }
    }
    if (rows.empty()) {
        return;
    }
    // Columns in order of first appearance; sizes in the order measured.
    std::vector<std::string> algos;
    std::vector<uint64_t> sizes;
    for (const row& r : rows) {
        if (std::find(algos.begin(), algos.end(), r.algo) == algos.end()) {
            algos.push_back(r.algo);
        }
        if (std::find(sizes.begin(), sizes.end(), r.bytes) == sizes.end()) {
            sizes.push_back(r.bytes);
        }
    }
    std::printf(
        "#\n# time (us, %s, %s%s%s) by size and algorithm; '*' the fastest at that size, '<' "
        "the tuner's choice\n",
        rows[0].inplace ? "in place" : "out of place", rows[0].dtype.c_str(),
        rows[0].op == "none" ? "" : " ", rows[0].op == "none" ? "" : rows[0].op.c_str());
    std::printf("# %10s", "size(B)");
    for (const std::string& a : algos) {
        std::printf("  %19s", a.empty() ? "-" : a.c_str());
    }
    std::printf("\n");
    for (uint64_t bytes : sizes) {
        const row* fastest = nullptr;
        for (const row& r : rows) {
            if (r.bytes == bytes && (fastest == nullptr || r.time_us < fastest->time_us)) {
                fastest = &r;
            }
        }
        std::printf("  %10llu", static_cast<unsigned long long>(bytes));
        for (const std::string& a : algos) {
            const row* cell = nullptr;
            for (const row& r : rows) {
                if (r.bytes == bytes && r.algo == a) {
                    cell = &r;
                }
            }
            std::string text = "-";
            if (cell != nullptr) {
                text = fixed(cell->time_us, 2) + (cell == fastest ? "*" : "") +
                       (cell->tuner_choice == 1 ? "<" : "");
            }
            std::printf("  %19s", text.c_str());
        }
        std::printf("\n");
    }
    std::fflush(stdout);
}

void show_progress(std::FILE* to, int done, int total, const char* coll, const std::string& algo,
                   uint64_t bytes) {
    // \033[K clears what a longer previous line left behind.
    std::fprintf(to, "\r[%d/%d] %s %s %s\033[K", done, total, coll,
                 algo.empty() ? "auto" : algo.c_str(), human_bytes(bytes).c_str());
    std::fflush(to);
}

void clear_progress(std::FILE* to) {
    std::fprintf(to, "\r\033[K");
    std::fflush(to);
}

std::FILE* progress_stream(progress_mode mode) {
    if (mode == progress_mode::off) {
        return nullptr;
    }
    if (isatty(STDERR_FILENO) == 1) {
        return stderr;
    }
    // A launched rank's stderr is a pipe to its launcher, which passes whole lines on; the
    // terminal the user started it from is still this session's. Unasked, it is used only
    // when the user is plainly at it: loomrun hands rank 0 its own stdin (a terminal when
    // typed at one), mpirun names the rank (OMPI_COMM_WORLD_RANK); a test harness or a
    // script with its input redirected sees no line on its terminal.
    bool at_terminal = isatty(STDIN_FILENO) == 1 || bootstrap::params::ompi_rank.is_set();
    if (mode == progress_mode::on || at_terminal) {
        if (std::FILE* tty = std::fopen("/dev/tty", "w"); tty != nullptr) {
            return tty;
        }
    }
    return mode == progress_mode::on ? stderr : nullptr;
}

}  // namespace loom::bench
