// SPDX-License-Identifier: Apache-2.0
// loom-bench: how fast loom's collectives run here, printed as nccl-tests prints it.
//
// Each rank is one process under loomrun; the communicator comes from the environment
// (loom_comm_create(NULL)). The sweep plans every type, op, root and size and the algorithms
// to run at each (loom_comm_explain), measures each point out of place and in place
// (measure.cc), and rank 0 prints a row per point, then the trailer, the --algo all
// comparison, the files and the --baseline verdict. Outputs and the baseline are checked
// before anything is measured. Before the table, rank 0 prints this machine's memcpy
// bandwidth, the ceiling the figures sit under.
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
            return {"ring", "binomial", "scatter-allgather", "dims", "dims-one-way"};
        case LOOM_REDUCE:
            return {"ring", "binomial", "dims", "dims-one-way"};
        case LOOM_ALLREDUCE:
            return {"ring", "bidir-ring",         "reduce-broadcast",
                    "dbt",  "recursive-doubling", "rabenseifner",
                    "dims", "dims-rabenseifner",  "hier-ring"};
        case LOOM_REDUCE_SCATTER:
            return {"ring", "bidir-ring", "recursive-halving", "pat", "dims", "dims-halving"};
        case LOOM_ALLGATHER:
            return {"ring", "bidir-ring", "recursive-doubling", "pat", "dims", "dims-doubling"};
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

explained explain(const bench_state& s, const call_spec& c, const shape& sh,
                  const loom_coll_attr_t* attr) {
    explained e;
    e.ex.struct_size = sizeof e.ex;
    // sendrecv has no root: explain's root argument is the peer this rank sends to.
    int root = c.coll == LOOM_SENDRECV ? send_peer(c) : c.root;
    e.ok = loom_comm_explain(s.comm, c.coll, sh.count, c.dtype, c.op, root, attr, &e.ex, nullptr,
                             0) == LOOM_SUCCESS;
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
std::vector<candidate> candidates_for(const bench_state& s, const call_spec& c, const shape& sh,
                                      std::string* choice) {
    if (c.schedule != nullptr) {
        *choice = "";  // the user's schedule: no choice of loom's to compare with
        return {candidate{}};
    }
    explained dflt = explain(s, c, sh, nullptr);
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
    for (std::string& name : catalogue_names(c.coll)) {
        out.push_back(candidate{std::move(name), true, -1});
    }
    return out;
}

row make_row(const bench_state& s, const call_spec& c, const shape& sh, const measured& m) {
    row r;
    r.collective = collective_name(c.coll);
    r.nranks     = c.n;
    r.bytes      = sh.total * c.elem;
    r.count      = sh.total;
    r.dtype      = dtype_name(c.dtype);
    r.op         = reduces(c.coll) ? op_name(c.op) : "none";
    r.root       = rooted(c.coll) ? c.root : -1;
    r.inplace    = c.inplace;
    r.time_us    = m.time_s * 1e6;
    r.mean_us    = m.time.mean * 1e6;
    r.p50_us     = m.time.p50 < 0 ? -1 : m.time.p50 * 1e6;
    r.p99_us     = m.time.p99 < 0 ? -1 : m.time.p99 * 1e6;
    r.algbw      = m.time_s > 0 ? static_cast<double>(r.bytes) / m.time_s / 1e9 : 0;
    r.busbw      = r.algbw * busbw_factor(c.coll, c.n);
    r.wrong      = s.o.check ? static_cast<int64_t>(m.wrong) : -1;
    r.sent_bytes = m.sent_bytes;
    return r;
}

// One size of one call (type, op, root) and what runs at it, planned before anything is
// timed (explain is local), so that the progress line knows the total.
struct step {
    call_spec call;
    shape sh;
    std::string choice;  // the tuner's choice; "" when loom cannot say
    std::vector<candidate> algos;
};

// The sizes of the sweep: multiplied by -f, or grown by -i.
std::vector<uint64_t> sizes_of(const options& o) {
    std::vector<uint64_t> sizes;
    for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
        sizes.push_back(bytes);
        uint64_t room = o.max_bytes - bytes;
        if (o.factor > 1 ? o.max_bytes / o.factor < bytes : room < o.step_bytes) {
            break;  // the next size would pass -e (or overflow)
        }
        bytes = o.factor > 1 ? bytes * o.factor : bytes + o.step_bytes;
    }
    return sizes;
}

// nccl-tests' order: per type, per op, per root, every size.
std::vector<step> plan(const bench_state& s) {
    const options& o = s.o;
    std::vector<step> steps;
    for (loom_dtype_t d : o.dtypes) {
        for (loom_op_t op : o.ops) {
            for (int root : o.roots) {
                call_spec c = s.spec;
                c.dtype     = d;
                c.op        = op;
                c.root      = root < 0 ? 0 : root;
                c.elem      = loom_dtype_size(d);
                for (uint64_t bytes : sizes_of(o)) {
                    step st;
                    st.call  = c;
                    st.sh    = c.schedule != nullptr ? shape_for_count(c, s.schedule_count)
                                                     : shape_for(c, bytes);
                    st.algos = candidates_for(s, c, st.sh, &st.choice);
                    steps.push_back(std::move(st));
                    if (c.schedule != nullptr) {
                        break;  // the schedule's one size
                    }
                }
            }
        }
    }
    return steps;
}

// One half of one point: measured, explained, made a row. *skip when the catalogue probe
// found the algorithm not for this call.
loom_status_t measure_half(bench_state& s, const step& p, const candidate& k, bool in_place,
                           row* out, bool* skip) {
    loom_coll_attr_t attr{};
    const loom_coll_attr_t* attr_ptr = nullptr;
    if (!k.name.empty()) {
        loom_coll_attr_init(&attr);
        attr.algorithm = k.name.c_str();
        attr_ptr       = &attr;
    }
    call_spec c = p.call;
    c.inplace   = in_place;
    measured m;
    loom_status_t st = measure(s, c, p.sh, attr_ptr, k.probe, &m);
    *skip = k.probe && (st == LOOM_ERR_NOT_APPLICABLE || st == LOOM_ERR_INVALID_ARGUMENT);
    if (st != LOOM_SUCCESS) {
        return st;
    }
    *out = make_row(s, c, p.sh, m);
    if (c.schedule != nullptr) {
        out->algo = s.schedule_name;  // what ran; loom predicts no user schedule
        return st;
    }
    explained e       = explain(s, c, p.sh, attr_ptr);
    out->algo         = e.ok ? std::string(e.ex.algorithm) : k.name;
    out->predicted_us = e.ok                 ? e.ex.predicted_s * 1e6
                        : k.predicted_s >= 0 ? k.predicted_s * 1e6
                                             : -1;
    out->tuner_choice = p.choice.empty() ? -1 : out->algo == p.choice ? 1 : 0;
    return st;
}

// The sweep: every step, every algorithm of it, both halves. Rows go to *rows; returns an
// exit code.
int sweep(bench_state& s, std::vector<row>* rows) {
    const options& o        = s.o;
    std::vector<step> steps = plan(s);
    int total = 0, done = 0;
    for (const step& p : steps) {
        total += static_cast<int>(p.algos.size());
    }
    for (const step& p : steps) {
        for (const candidate& k : p.algos) {
            if (s.progress != nullptr) {
                show_progress(s.progress, ++done, total, collective_name(o.coll), k.name,
                              p.sh.total * p.call.elem);
            }
            row halves[2];
            bool measured_half[2] = {false, false}, skip = false;
            for (int h = 0; h < 2 && !skip; ++h) {
                bool in_place = h == 1;
                if (!(in_place ? o.in_place : o.out_of_place)) {
                    continue;
                }
                loom_status_t st = measure_half(s, p, k, in_place, &halves[h], &skip);
                if (skip) {
                    break;  // not for this call (the catalogue fallback)
                }
                if (st != LOOM_SUCCESS) {
                    if (s.progress != nullptr) {
                        clear_progress(s.progress);
                    }
                    return call_failed(st);
                }
                measured_half[h] = true;
            }
            if (skip) {
                continue;
            }
            if (s.spec.rank == 0) {
                if (s.progress != nullptr) {
                    clear_progress(s.progress);
                }
                print_row(measured_half[0] ? &halves[0] : nullptr,
                          measured_half[1] ? &halves[1] : nullptr);
            }
            for (int h = 0; h < 2; ++h) {
                if (measured_half[h]) {
                    rows->push_back(std::move(halves[h]));
                }
            }
        }
    }
    if (s.progress != nullptr) {
        clear_progress(s.progress);
    }
    return exit_ok;
}

// Rank 0's epilogue: the trailer, the comparison, the files. Returns an exit code.
int report(const bench_state& s, const std::vector<row>& rows) {
    const options& o = s.o;
    print_trailer(o, rows);
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
        wrote(write_plot(o.plot_path, o, s.spec.n, rows, &warning));
        if (!warning.empty()) {
            std::fprintf(stderr, "loom-bench: warning: %s\n", warning.c_str());
        }
    }
    return code;
}

// Every rank's "Pid P on HOST", gathered for rank 0's device lines (nccl-tests' "Using
// devices"); empty when the gather fails (the header then has none).
std::vector<std::string> gather_devices(const bench_state& s) {
    constexpr size_t width = 96;
    std::string mine(width, '\0');
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    std::snprintf(mine.data(), width, "Pid %6d on %10s", static_cast<int>(getpid()), host);
    std::vector<char> all(width * static_cast<size_t>(s.spec.n));
    std::memcpy(all.data() + width * static_cast<size_t>(s.spec.rank), mine.data(), width);
    char* block = all.data() + width * static_cast<size_t>(s.spec.rank);
    if (loom_allgather(s.comm, block, all.data(), all.size(), LOOM_UINT8, nullptr, nullptr) !=
        LOOM_SUCCESS) {
        return {};
    }
    std::vector<std::string> out;
    for (int r = 0; r < s.spec.n; ++r) {
        out.emplace_back(all.data() + width * static_cast<size_t>(r));
    }
    return out;
}

// What is wrong with this run now that N is known ("" when nothing): a root past N, a
// sendrecv of one rank, an output file that cannot be written, a baseline of another
// experiment. Rank 0 decides (the outputs are its); every rank learns the verdict.
std::string refusal(const bench_state& s, const baseline* base) {
    const options& o   = s.o;
    const call_spec& c = s.spec;
    std::string bad;
    for (int root : o.roots) {
        if (rooted(o.coll) && root >= c.n && bad.empty()) {
            bad = "-r " + std::to_string(root) + ": the root must be in 0.." +
                  std::to_string(c.n - 1);
        }
    }
    if (bad.empty() && o.coll == LOOM_SENDRECV && c.n < 2) {
        bad = "sendrecv needs at least 2 ranks (a rank does not send to itself)";
    }
    if (bad.empty() && c.rank == 0) {
        bad = check_output_paths(o);
    }
    if (bad.empty() && base != nullptr) {
        bad = baseline_mismatch(*base, describe_experiment(o, c.n), o);
    }
    int verdict = bad.empty() ? 0 : 1, any = 0;
    if (loom_allreduce(s.comm, &verdict, &any, 1, LOOM_INT32, LOOM_MAX, nullptr, nullptr) !=
        LOOM_SUCCESS) {
        return bad.empty() ? std::string("cannot agree on the run: ") + loom_last_error_message()
                           : bad;
    }
    return any != 0 && bad.empty() ? "refused by rank 0" : bad;
}

// --schedule FILE: every rank loads and verifies it (the same verdict everywhere, but a
// file one host cannot read fails there only, so the ranks agree on the first failure and
// that rank says why). Its collective must be the one asked for; its root is the run's.
int load_schedule(bench_state& s) {
    call_spec& c     = s.spec;
    loom_status_t st = loom_schedule_load_file(s.comm, s.o.schedule_path.c_str(), &c.schedule);
    std::string why  = st == LOOM_SUCCESS ? "" : loom_last_error_message();
    loom_schedule_info_t info{};
    info.struct_size = sizeof info;
    if (st == LOOM_SUCCESS && loom_schedule_query(c.schedule, &info) == LOOM_SUCCESS &&
        info.collective != s.o.coll) {
        why = s.o.schedule_path + " computes " + collective_name(info.collective) + ", not " +
              collective_name(s.o.coll);
    }
    int mine = why.empty() ? c.n : c.rank, first = c.n;
    if (loom_allreduce(s.comm, &mine, &first, 1, LOOM_INT32, LOOM_MIN, nullptr, nullptr) !=
        LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-bench: --schedule: %s\n", loom_last_error_message());
        return exit_failed;
    }
    if (first < c.n) {
        if (c.rank == first) {
            std::fprintf(stderr, "loom-bench: %s\n",
                         why.empty() ? "--schedule refused" : why.c_str());
        }
        loom_schedule_free(c.schedule);
        c.schedule = nullptr;
        loom_barrier(s.comm, nullptr, nullptr);  // the line first: loomrun ends the job
        return exit_bad_args;
    }
    s.schedule_count = info.count;
    // The buffers hold the schedule's one size at the widest type (8 bytes), whatever -e says.
    uint64_t elems = std::max<uint64_t>(
        {info.input_count, info.output_count, shape_for_count(c, info.count).total, 1});
    s.o.max_bytes = elems * 8;
    if (rooted(s.o.coll)) {
        s.o.roots = {info.root};
    }
    const std::string& path = s.o.schedule_path;
    s.schedule_name         = "schedule:" + path.substr(path.find_last_of('/') + 1);
    return exit_ok;
}

int run(options o) {
    // A bad baseline file is a bad argument: found before any rank starts measuring.
    baseline base;
    if (!o.baseline_path.empty()) {
        if (std::string error = load_baseline(o.baseline_path, &base); !error.empty()) {
            std::fprintf(stderr, "loom-bench: %s\n", error.c_str());
            return exit_bad_args;
        }
    }
    double memcpy = likely_rank0() ? memcpy_gbps() : 0;
    bench_state s;
    if (loom_status_t st = loom_comm_create(nullptr, &s.comm); st != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-bench: loom_comm_create: %s\n", loom_last_error_message());
        return st == LOOM_ERR_INVALID_ARGUMENT ? exit_bad_args : exit_failed;
    }
    call_spec& c = s.spec;
    c.coll       = o.coll;
    c.rank       = loom_comm_rank(s.comm);
    c.n          = loom_comm_size(s.comm);
    if (o.all_roots) {
        o.roots.clear();
        for (int r = 0; r < c.n; ++r) {
            o.roots.push_back(r);
        }
    }
    s.o = o;
    if (!o.schedule_path.empty()) {
        if (int code = load_schedule(s); code != exit_ok) {
            loom_comm_destroy(s.comm);
            return code;
        }
        o = s.o;  // the schedule's root and size
    }
    if (std::string bad = refusal(s, o.baseline_path.empty() ? nullptr : &base); !bad.empty()) {
        if (c.rank == 0) {
            std::fprintf(stderr, "loom-bench: %s\n", bad.c_str());
        }
        loom_barrier(s.comm, nullptr, nullptr);  // rank 0's line first: loomrun ends the job
        loom_schedule_free(s.spec.schedule);     // NULL without --schedule
        loom_comm_destroy(s.comm);
        return exit_bad_args;
    }
    s.bufs.bytes = static_cast<size_t>(o.max_bytes / 8 * 8 + 8);
    s.send       = allocate(s.bufs.bytes);
    s.recv       = allocate(s.bufs.bytes);
    s.bufs.send  = s.send.get();
    s.bufs.recv  = s.recv.get();
    s.enter.resize(static_cast<size_t>(o.iters));
    s.leave.resize(static_cast<size_t>(o.iters));
    s.times.reserve(static_cast<size_t>(o.iters));
    s.progress = c.rank == 0 ? progress_stream(o.progress) : nullptr;
    if (!s.send || !s.recv) {
        std::fprintf(stderr, "loom-bench: rank %d: cannot allocate 2 x %zu bytes\n", c.rank,
                     s.bufs.bytes);
        loom_comm_abort(s.comm, "loom-bench: out of memory");
        loom_schedule_free(s.spec.schedule);  // NULL without --schedule
        loom_comm_destroy(s.comm);
        return exit_failed;
    }
    std::vector<std::string> devices = gather_devices(s);
    if (c.rank == 0) {
        loom_calibration_t cal{};
        cal.struct_size = sizeof cal;
        std::string carrier =
            loom_comm_calibration(s.comm, &cal) == LOOM_SUCCESS ? cal.transport : "";
        print_header({&o, c.n, memcpy, devices, carrier});
    }

    // Settle before the first size: right after start-up the kernel often has the ranks
    // stacked on one core, and takes milliseconds to spread them; a fixed count of barriers
    // (the same on every rank, and in the peers' harnesses) gives it that time, so the first
    // size is not measured on a machine still sorting itself out.
    for (int i = 0; i < settle_barriers; ++i) {
        if (loom_barrier(s.comm, nullptr, nullptr) != LOOM_SUCCESS) {
            std::fprintf(stderr, "loom-bench: rank %d: barrier: %s\n", c.rank,
                         loom_last_error_message());
            loom_schedule_free(s.spec.schedule);  // NULL without --schedule
            loom_comm_destroy(s.comm);
            return exit_failed;
        }
    }
    std::vector<row> rows;
    int code = sweep(s, &rows);
    if (s.progress != nullptr && s.progress != stderr) {
        std::fclose(s.progress);
    }
    if (code != exit_ok) {
        loom_comm_abort(s.comm, "loom-bench: a call failed");
        loom_schedule_free(s.spec.schedule);  // NULL without --schedule
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
        code = compare_baseline(base, rows, o.tolerance_pct, c.rank == 0);
    }
    // The other ranks wait for rank 0's report: loomrun ends the job at the first non-zero
    // exit, which would otherwise cut rank 0 short before it has printed why.
    loom_barrier(s.comm, nullptr, nullptr);
    loom_schedule_free(s.spec.schedule);
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
            std::fputs(error.c_str(), stdout);
            return exit_ok;
        case parse_outcome::version:
            std::printf("loom-bench %s\nfeatures: %s\n", loom_version(), loom_build_features());
            return exit_ok;
        case parse_outcome::fail:
            std::fprintf(stderr, "loom-bench: %s\n", error.c_str());
            return exit_bad_args;
        case parse_outcome::run:
            break;
    }
    return o.calibrate ? run_calibrate(o) : run(o);
}
