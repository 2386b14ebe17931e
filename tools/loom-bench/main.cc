// loom-bench: how fast loom's collectives run here, printed as nccl-tests prints it.
//
// Each rank is one process under loomrun; the communicator comes from the environment
// (loom_comm_create(NULL)). The sweep plans every size and the algorithms to run at it
// (loom_comm_explain), measures each point (measure.cc), and rank 0 prints a row per point,
// then the summary, the --algo all comparison, the files and the --baseline verdict. Before
// the table, rank 0 prints this machine's memcpy bandwidth, the ceiling the figures sit
// under.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench.hh"
#include "bootstrap/bootstrap_params.hh"

namespace loom::bench {
namespace {

// Page-aligned and touched, so the first timed call takes no page faults.
buffer allocate(size_t bytes) {
    size_t rounded = (std::max<size_t>(bytes, 64) + 4095) / 4096 * 4096;
    buffer b(std::aligned_alloc(4096, rounded));
    if (b) {
        std::memset(b.get(), 0, rounded);
    }
    return b;
}

constexpr size_t memcpy_bytes = 64u << 20;
constexpr int memcpy_reps     = 10;

// Best of memcpy_reps copies of 64 MiB, in GB/s (bytes copied, not bytes moved: a copy
// reads and writes each byte). 0 when the buffers cannot be had.
double memcpy_gbps() {
    buffer src = allocate(memcpy_bytes), dst = allocate(memcpy_bytes);
    if (!src || !dst) {
        return 0;
    }
    std::memset(src.get(), 0x5a, memcpy_bytes);
    volatile unsigned char sink = 0;
    double best                 = 1e30;
    for (int rep = 0; rep <= memcpy_reps; ++rep) {  // rep 0 warms up
        static_cast<unsigned char*>(src.get())[rep] = static_cast<unsigned char>(rep);
        double t0                                   = now_s();
        std::memcpy(dst.get(), src.get(), memcpy_bytes);
        double t = now_s() - t0;
        sink     = sink + static_cast<unsigned char*>(dst.get())[rep];
        if (rep > 0) {
            best = std::min(best, t);
        }
    }
    return static_cast<double>(memcpy_bytes) / best / 1e9;
}

// Whether this process will be rank 0 (from LOOM_RANK, set by loomrun), known before the
// communicator exists: rank 0 measures memcpy while the others wait for the rendezvous
// (asleep), not while they poll in a barrier on the same cores.
bool likely_rank0() {
    return !bootstrap::params::rank.is_set() || bootstrap::params::rank.get() == 0;
}

// --algo all without loom_comm_explain (a loom that cannot explain yet): the catalogue's
// names per primitive, each tried once untimed; the ones loom refuses for this call are
// left out, as explain would have marked them not applicable. Not "inc": only explain can
// tell whether this communicator has an aggregation node that admitted it.
std::vector<std::string> catalogue_names(loom_collective_t c) {
    switch (c) {
        case LOOM_BROADCAST:
        case LOOM_REDUCE:
            return {"ring", "binomial", "dims"};
        case LOOM_ALLREDUCE:
            return {"ring", "reduce-broadcast", "dbt", "recursive-doubling", "rabenseifner",
                    "dims"};
        case LOOM_REDUCE_SCATTER:
            return {"ring", "recursive-halving", "pat", "dims"};
        case LOOM_ALLGATHER:
            return {"ring", "recursive-doubling", "pat", "dims"};
        case LOOM_ALLTOALL:
            return {"bruck", "pairwise", "ring-relay", "dor-relay", "dims"};
        default:
            return {"direct"};
    }
}

// One algorithm to run at one size: `name` empty means attr NULL (LOOM_ALGO, else the
// tuner); `probe` means loom may refuse it (the catalogue fallback above).
struct candidate {
    std::string name;
    bool probe         = false;
    double predicted_s = -1;
};

// What loom_comm_explain says about a call; ok false when it cannot say.
struct explained {
    bool ok = false;
    loom_explain_t ex{};
};

explained explain(const bench_state& s, const shape& sh, const loom_coll_attr_t* attr) {
    explained e;
    e.ex.struct_size = sizeof e.ex;
    // sendrecv has no root: explain's root argument is the peer this rank sends to.
    int root = s.spec.coll == LOOM_SENDRECV ? send_peer(s.spec) : s.spec.root;
    e.ok     = loom_comm_explain(s.comm, s.spec.coll, sh.count, s.spec.dtype, s.spec.op, root, attr,
                                 &e.ex, nullptr, 0) == LOOM_SUCCESS;
    return e;
}

// loom's message already names the rank, the collective and the reason.
int call_failed(loom_status_t st) {
    std::fflush(stdout);
    std::fprintf(stderr, "loom-bench: %s\n", loom_last_error_message());
    bool bad_args = st == LOOM_ERR_INVALID_ARGUMENT || st == LOOM_ERR_NOT_APPLICABLE;
    return bad_args ? exit_bad_args : exit_failed;
}

// The algorithms to run at one size, and the tuner's choice ("" when loom cannot say).
std::vector<candidate> candidates_for(const bench_state& s, const shape& sh, std::string* choice) {
    explained dflt = explain(s, sh, nullptr);
    *choice        = dflt.ok ? dflt.ex.algorithm : "";
    switch (s.o.mode) {
        case algo_mode::automatic:
            return {candidate{}};
        case algo_mode::named:
            return {candidate{s.o.algo, false, -1}};
        default:
            break;
    }
    std::vector<candidate> out;
    if (dflt.ok) {
        for (int i = 0; i < dflt.ex.n_candidates && i < LOOM_EXPLAIN_MAX_CANDIDATES; ++i) {
            const loom_explain_candidate_t& k = dflt.ex.candidates[i];
            if (k.applicable == 1) {
                out.push_back(candidate{k.algorithm, false, k.predicted_s});
            }
        }
        return out;
    }
    for (std::string& name : catalogue_names(s.spec.coll)) {
        out.push_back(candidate{std::move(name), true, -1});
    }
    return out;
}

row make_row(const bench_state& s, const shape& sh, const measured& m) {
    const options& o = s.o;
    row r;
    r.collective = collective_name(o.coll);
    r.nranks     = s.spec.n;
    r.bytes      = sh.total * s.spec.elem;
    r.count      = sh.total;
    r.dtype      = dtype_name(o.dtype);
    r.op         = reduces(o.coll) ? op_name(o.op) : "none";
    r.root       = rooted(o.coll) ? o.root : -1;
    r.inplace    = o.inplace;
    r.mean_us    = m.time.mean * 1e6;
    r.p50_us     = m.time.p50 * 1e6;
    r.p99_us     = m.time.p99 * 1e6;
    r.algbw      = m.time.p50 > 0 ? static_cast<double>(r.bytes) / m.time.p50 / 1e9 : 0;
    r.busbw      = r.algbw * busbw_factor(o.coll, s.spec.n);
    r.wrong      = o.check ? static_cast<int64_t>(m.wrong) : -1;
    r.sent_bytes = m.sent_bytes;
    return r;
}

// One size of the sweep and what runs at it, planned before anything is timed (explain is
// local), so that the progress line knows the total.
struct step {
    shape sh;
    std::string choice;  // the tuner's choice; "" when loom cannot say
    std::vector<candidate> algos;
};

std::vector<step> plan(const bench_state& s) {
    const options& o = s.o;
    std::vector<step> steps;
    for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
        step st;
        st.sh    = shape_for(s.spec, bytes);
        st.algos = candidates_for(s, st.sh, &st.choice);
        steps.push_back(std::move(st));
        if (o.max_bytes / o.factor < bytes) {
            break;  // the next size would pass -e (or overflow)
        }
    }
    return steps;
}

// The sweep: every size, every algorithm of that size. Rows go to *rows; returns an exit code.
int sweep(bench_state& s, std::vector<row>* rows) {
    const options& o        = s.o;
    std::vector<step> steps = plan(s);
    int total = 0, done = 0;
    for (const step& p : steps) {
        total += static_cast<int>(p.algos.size());
    }
    for (const step& p : steps) {
        for (const candidate& k : p.algos) {
            loom_coll_attr_t attr{};
            const loom_coll_attr_t* attr_ptr = nullptr;
            if (!k.name.empty()) {
                loom_coll_attr_init(&attr);
                attr.algorithm = k.name.c_str();
                attr_ptr       = &attr;
            }
            if (s.progress) {
                show_progress(++done, total, collective_name(o.coll), k.name,
                              p.sh.total * s.spec.elem);
            }
            measured m;
            loom_status_t st = measure(s, p.sh, attr_ptr, k.probe, &m);
            if (k.probe && (st == LOOM_ERR_NOT_APPLICABLE || st == LOOM_ERR_INVALID_ARGUMENT)) {
                continue;  // not for this call (the catalogue fallback)
            }
            if (st != LOOM_SUCCESS) {
                if (s.progress) {
                    clear_progress();
                }
                return call_failed(st);
            }
            row r          = make_row(s, p.sh, m);
            explained e    = explain(s, p.sh, attr_ptr);
            r.algo         = e.ok ? std::string(e.ex.algorithm) : k.name;
            r.predicted_us = e.ok                 ? e.ex.predicted_s * 1e6
                             : k.predicted_s >= 0 ? k.predicted_s * 1e6
                                                  : -1;
            r.tuner_choice = p.choice.empty() ? -1 : r.algo == p.choice ? 1 : 0;
            if (s.spec.rank == 0) {
                if (s.progress) {
                    clear_progress();
                }
                print_row(r);
            }
            rows->push_back(std::move(r));
        }
    }
    if (s.progress) {
        clear_progress();
    }
    return exit_ok;
}

// Rank 0's epilogue: the summary, the comparison, the files. Returns an exit code.
int report(const bench_state& s, const std::vector<row>& rows) {
    const options& o     = s.o;
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
    std::printf("# Avg bus bandwidth    : %.3f GB/s\n",
                rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
    if (o.mode == algo_mode::all) {
        print_comparison(rows);
    }
    std::fflush(stdout);
    int code   = exit_ok;
    auto wrote = [&](const std::string& error) {
        if (!error.empty()) {
            std::fprintf(stderr, "loom-bench: %s\n", error.c_str());
            code = exit_failed;
        }
    };
    if (!o.csv_path.empty()) {
        wrote(write_csv(o.csv_path, rows));
    }
    if (!o.json_path.empty()) {
        wrote(write_json(o.json_path, describe_run(o, s.spec.n), rows));
    }
    if (!o.plot_path.empty()) {
        std::string warning;
        wrote(write_plot(o.plot_path, rows, &warning));
        if (!warning.empty()) {
            std::fprintf(stderr, "loom-bench: warning: %s\n", warning.c_str());
        }
    }
    return code;
}

int run(const options& o) {
    // A bad baseline file is a bad argument: found before any rank starts measuring.
    std::vector<baseline_point> baseline;
    if (!o.baseline_path.empty()) {
        if (std::string error = load_baseline(o.baseline_path, &baseline); !error.empty()) {
            std::fprintf(stderr, "loom-bench: %s\n", error.c_str());
            return exit_bad_args;
        }
    }
    double memcpy = likely_rank0() ? memcpy_gbps() : 0;
    bench_state s;
    s.o = o;
    if (loom_status_t st = loom_comm_create(nullptr, &s.comm); st != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-bench: loom_comm_create: %s\n", loom_last_error_message());
        return st == LOOM_ERR_INVALID_ARGUMENT ? exit_bad_args : exit_failed;
    }
    call_spec& c = s.spec;
    c.coll       = o.coll;
    c.dtype      = o.dtype;
    c.op         = o.op;
    c.root       = o.root;
    c.inplace    = o.inplace;
    c.rank       = loom_comm_rank(s.comm);
    c.n          = loom_comm_size(s.comm);
    c.elem       = loom_dtype_size(o.dtype);
    std::string bad;
    if (rooted(o.coll) && o.root >= c.n) {
        bad =
            "-r " + std::to_string(o.root) + ": the root must be in 0.." + std::to_string(c.n - 1);
    } else if (o.coll == LOOM_SENDRECV && c.n < 2) {
        bad = "sendrecv needs at least 2 ranks (a rank does not send to itself)";
    }
    if (!bad.empty()) {
        if (c.rank == 0) {
            std::fprintf(stderr, "loom-bench: %s\n", bad.c_str());
        }
        loom_comm_destroy(s.comm);
        return exit_bad_args;
    }
    s.bufs.bytes = static_cast<size_t>(o.max_bytes / c.elem * c.elem);
    s.send       = allocate(s.bufs.bytes);
    s.recv       = allocate(s.bufs.bytes);
    s.bufs.send  = s.send.get();
    s.bufs.recv  = s.recv.get();
    s.enter.resize(static_cast<size_t>(o.iters));
    s.leave.resize(static_cast<size_t>(o.iters));
    s.times.reserve(static_cast<size_t>(o.iters));
    s.progress = c.rank == 0 && !o.quiet && isatty(STDERR_FILENO) == 1;
    if (!s.send || !s.recv) {
        std::fprintf(stderr, "loom-bench: rank %d: cannot allocate 2 x %zu bytes\n", c.rank,
                     s.bufs.bytes);
        loom_comm_abort(s.comm, "loom-bench: out of memory");
        loom_comm_destroy(s.comm);
        return exit_failed;
    }
    if (c.rank == 0) {
        print_header({&o, c.n, memcpy});
    }

    // Settle before the first size: right after start-up the kernel often has the ranks
    // stacked on one core, and takes milliseconds to spread them; a fixed count of barriers
    // (the same on every rank, and in the peers' harnesses) gives it that time, so the first
    // size is not measured on a machine still sorting itself out.
    for (int i = 0; i < settle_barriers; ++i) {
        if (loom_barrier(s.comm, nullptr, nullptr) != LOOM_SUCCESS) {
            std::fprintf(stderr, "loom-bench: rank %d: barrier: %s\n", c.rank,
                         loom_last_error_message());
            loom_comm_destroy(s.comm);
            return exit_failed;
        }
    }
    std::vector<row> rows;
    int code = sweep(s, &rows);
    if (code != exit_ok) {
        loom_comm_abort(s.comm, "loom-bench: a call failed");
        loom_comm_destroy(s.comm);
        return code;
    }
    if (c.rank == 0) {
        code = report(s, rows);
    }
    bool any_wrong =
        std::any_of(rows.begin(), rows.end(), [](const row& r) { return r.wrong > 0; });
    if (code == exit_ok && any_wrong) {
        code = exit_failed;
    }
    // Every rank holds the same rows (the times are allreduced), so every rank reaches the
    // same verdict; rank 0 prints it.
    if (code == exit_ok && !o.baseline_path.empty()) {
        code = compare_baseline(baseline, rows, o.tolerance_pct, c.rank == 0);
    }
    // The other ranks wait for rank 0's report: loomrun ends the job at the first non-zero
    // exit, which would otherwise cut rank 0 short before it has printed why.
    loom_barrier(s.comm, nullptr, nullptr);
    loom_comm_destroy(s.comm);
    return code;
}

}  // namespace
}  // namespace loom::bench

int main(int argc, char** argv) {
    using namespace loom::bench;
    options o;
    std::string error;
    switch (parse_options(argc, argv, &o, &error)) {
        case parse_outcome::help:
            std::fputs(usage_text(), stdout);
            return exit_ok;
        case parse_outcome::fail:
            std::fprintf(stderr, "loom-bench: %s\n", error.c_str());
            return exit_bad_args;
        case parse_outcome::run:
            break;
    }
    return o.calibrate ? run_calibrate(o) : run(o);
}
