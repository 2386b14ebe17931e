// What rank 0 prints: the header, one nccl-tests row per measured point (nccl-tests' columns
// first, in its order, so scripts that read nccl-tests output read these; loom's own columns
// after), the --algo all comparison and the progress line.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench.hh"
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

void print_header(const header_info& h) {
    const options& o      = *h.o;
    std::string transport = comm::params::transport.get();
    std::string how       = !transport.empty() ? transport + " (LOOM_TRANSPORT)"
                            : h.n == 1         ? std::string("self (default for one rank)")
                                               : std::string("shm (default)");
    std::printf("# loom-bench %s, loom %s: N = %d ranks, transport %s\n", collective_name(o.coll),
                loom_version(), h.n, how.c_str());
    std::printf("# algorithm: %s%s\n", algo_origin(o),
                o.mode == algo_mode::named ? (" " + o.algo).c_str() : "");
    std::printf("# sizes %llu..%llu B, factor %llu; warm-up %d, iters %d; check %s; dtype %s",
                static_cast<unsigned long long>(o.min_bytes),
                static_cast<unsigned long long>(o.max_bytes),
                static_cast<unsigned long long>(o.factor), o.warmup, o.iters,
                o.check ? "on" : "off", dtype_name(o.dtype));
    if (reduces(o.coll)) {
        std::printf(", op %s", op_name(o.op));
    }
    if (rooted(o.coll)) {
        std::printf(", root %d", o.root);
    }
    std::printf("; %s\n", o.inplace ? "in place" : "out of place");
    std::printf(
        "# time: per iteration a barrier, then one call timed from the last rank entering to\n"
        "#   the last rank leaving; time = p50 (median) over iterations, mean and p99 too\n"
        "# pred: loom's predicted time; sent(B)/rank: bytes this call handed to the transport,\n"
        "#   the maximum over ranks (loom_comm_traffic); '-' where loom cannot say\n");
    if (h.memcpy_gbps > 0) {
        std::printf("# memcpy bandwidth (rank 0, 64 MiB, best of 10): %.2f GB/s\n", h.memcpy_gbps);
    } else {
        std::printf("# memcpy bandwidth: not measured\n");
    }
    std::printf("#\n");
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %-19s  %9s  %9s  %9s  %9s  %12s\n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "algo",
        "pred", "mean", "p50", "p99", "sent");
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %-19s  %9s  %9s  %9s  %9s  %12s\n", "(B)",
        "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", "(us)", "(us)", "(us)",
        "(us)", "(B)/rank");
    std::fflush(stdout);
}

void print_row(const row& r) {
    std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(static_cast<long long>(r.wrong));
    std::string pred  = r.predicted_us < 0 ? "-" : fixed(r.predicted_us, 2);
    std::string sent  = r.sent_bytes < 0 ? "-" : fixed(r.sent_bytes, 0);
    std::printf(
        "  %10llu  %12llu  %8s  %6s  %6d  %9.2f  %7.3f  %7.3f  %6s  %-19s  %9s  %9.2f  "
        "%9.2f  %9.2f  %12s\n",
        static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count),
        r.dtype.c_str(), r.op.c_str(), r.root, r.p50_us, r.algbw, r.busbw, wrong.c_str(),
        r.algo.empty() ? "-" : r.algo.c_str(), pred.c_str(), r.mean_us, r.p50_us, r.p99_us,
        sent.c_str());
    std::fflush(stdout);
}

void print_comparison(const std::vector<row>& rows) {
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
        "#\n# p50 time (us) by size and algorithm; '*' the fastest at that size, '<' the "
        "tuner's choice\n");
    std::printf("# %10s", "size(B)");
    for (const std::string& a : algos) {
        std::printf("  %19s", a.empty() ? "-" : a.c_str());
    }
    std::printf("\n");
    for (uint64_t bytes : sizes) {
        const row* fastest = nullptr;
        for (const row& r : rows) {
            if (r.bytes == bytes && (fastest == nullptr || r.p50_us < fastest->p50_us)) {
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
                text = fixed(cell->p50_us, 2) + (cell == fastest ? "*" : "") +
                       (cell->tuner_choice == 1 ? "<" : "");
            }
            std::printf("  %19s", text.c_str());
        }
        std::printf("\n");
    }
    std::fflush(stdout);
}

void show_progress(int done, int total, const char* coll, const std::string& algo, uint64_t bytes) {
    // \033[K clears what a longer previous line left behind.
    std::fprintf(stderr, "\r[%d/%d] %s %s %s\033[K", done, total, coll,
                 algo.empty() ? "auto" : algo.c_str(), human_bytes(bytes).c_str());
    std::fflush(stderr);
}

void clear_progress() {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
}

}  // namespace loom::bench
