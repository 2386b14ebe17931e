// The tuner through the C API, rank by rank under loomrun (run_tuner.sh):
//  - every rank starts with its own calibration file holding different figures; the
//    communicator agrees on rank 0's, so loom_comm_calibration reports rank 0's figures
//    everywhere and every choice (all primitives × dtypes × 8 B … 64 MiB) is identical on
//    all ranks (a choice differing across ranks would be a mismatch);
//  - the choice is applicable, comes from the tuner, and ranks first among the candidates
//    (or second to one within the bucket's span); explicit choices report their origin and
//    errors; excluded algorithms carry their reason;
//  - calls made with the tuner's choice give exact results, and the traffic counters equal
//    the schedule's bytes: ring all-reduce 2(N-1)/N·M per rank, pairwise all-to-all (N-1)/N·M;
//  - loom_comm_calibrate measures, writes rank 0's file and every rank adopts the figures.
// Usage: test_api_tuner WORKDIR (rank files WORKDIR/rank-<r>.txt), or
//        test_api_tuner --expect-source SOURCE [CLASS]: LOOM_CALIBRATION_FILE as the
//        environment sets it; every rank's agreed figures come from SOURCE (measured,
//        file, defaults), for the cost class CLASS (shm, tcp) when given.
#include <loom/loom.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm/api_handle.hh"

namespace {

int checks = 0, failed = 0, rank_ = -1, size_ = 0;

void expect(bool ok, const std::string& what) {
    ++checks;
    if (!ok) {
        ++failed;
        std::printf("rank %d: FAILED: %s\n", rank_, what.c_str());
    }
}

std::string host() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf[0] ? buf : "localhost";
}

uint64_t fnv(uint64_t h, const char* s) {
    for (; *s; ++s) {
        h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ull;
    }
    return h;
}

// The same value on every rank: max == min over the communicator.
bool same_everywhere(loom_comm_t comm, uint64_t v) {
    uint64_t hi = 0, lo = 0;
    loom_allreduce(comm, &v, &hi, 1, LOOM_UINT64, LOOM_MAX, nullptr, nullptr);
    loom_allreduce(comm, &v, &lo, 1, LOOM_UINT64, LOOM_MIN, nullptr, nullptr);
    return hi == lo;
}

loom_explain_t explain(loom_comm_t comm, loom_collective_t coll, size_t count, loom_dtype_t dtype,
                       const loom_coll_attr_t* attr, loom_status_t* st, std::string* text) {
    loom_explain_t e;
    std::memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    char buf[8192];
    *st = loom_comm_explain(comm, coll, count, dtype, LOOM_SUM, 0, attr, &e, buf, sizeof buf);
    if (text) {
        *text = buf;
    }
    return e;
}

void agreed_parameters(loom_comm_t comm) {
    loom_calibration_t cal;
    cal.struct_size = sizeof cal;
    expect(loom_comm_calibration(comm, &cal) == LOOM_SUCCESS, "loom_comm_calibration");
    // rank 0's file says 1 µs and 1 GB/s; rank r's says r+1.
    expect(std::fabs(cal.alpha_s - 1e-6) < 1e-12,
           "alpha " + std::to_string(cal.alpha_s) + " is not rank 0's 1 us");
    expect(std::fabs(cal.bw_bytes_per_s - 1e9) < 1, "BW is not rank 0's 1 GB/s");
    expect(std::string(cal.source) == "file", std::string("source ") + cal.source);
}

void identical_choices(loom_comm_t comm) {
    const loom_collective_t colls[] = {LOOM_BROADCAST,      LOOM_REDUCE,    LOOM_ALLREDUCE,
                                       LOOM_REDUCE_SCATTER, LOOM_ALLGATHER, LOOM_ALLTOALL};
    const loom_dtype_t dtypes[]     = {LOOM_INT8, LOOM_FLOAT32, LOOM_FLOAT64};
    uint64_t h                      = 0xcbf29ce484222325ull;
    int decisions                   = 0;
    for (loom_collective_t coll : colls) {
        for (loom_dtype_t d : dtypes) {
            for (size_t bytes = 8; bytes <= (size_t{64} << 20); bytes *= 4) {
                size_t count = std::max<size_t>(1, bytes / loom_dtype_size(d));
                loom_status_t st;
                loom_explain_t e = explain(comm, coll, count, d, nullptr, &st, nullptr);
                expect(st == LOOM_SUCCESS, std::string("explain: ") + loom_last_error_message());
                expect(std::string(e.origin) == "tuner", std::string("origin ") + e.origin);
                bool listed_applicable = false;
                double best            = 1e30;
                for (int i = 0; i < e.n_candidates; ++i) {
                    const auto& k = e.candidates[i];
                    if (k.applicable) {
                        best = std::min(best, k.predicted_s);
                    } else {
                        expect(k.reason[0] != '\0', std::string(k.algorithm) + " has no reason");
                    }
                    if (std::strcmp(k.algorithm, e.algorithm) == 0) {
                        listed_applicable = k.applicable != 0;
                    }
                }
                expect(listed_applicable, std::string(e.algorithm) + " not applicable");
                // Decided at the bucket's middle: within the span of one bucket (×√2 bytes)
                // of the best at this exact size.
                expect(e.predicted_s <= best * 1.5 + 1e-9,
                       std::string(e.algorithm) + " predicted " + std::to_string(e.predicted_s) +
                           " s, best " + std::to_string(best));
                h = fnv(h, e.algorithm);
                ++decisions;
            }
        }
    }
    expect(same_everywhere(comm, h), "the choices differ across ranks");
    if (rank_ == 0) {
        std::printf("rank 0: %d choices, identical on all %d ranks\n", decisions, size_);
    }
}

void explicit_choices(loom_comm_t comm) {
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.algorithm = "ring";
    loom_status_t st;
    loom_explain_t e = explain(comm, LOOM_ALLREDUCE, 1000, LOOM_FLOAT32, &attr, &st, nullptr);
    expect(st == LOOM_SUCCESS && std::string(e.algorithm) == "ring" &&
               std::string(e.origin) == "attribute",
           "attribute ring → " + std::string(e.algorithm) + " from " + e.origin);
    attr.algorithm = "dims";  // needs a torus: an error naming what would run
    e              = explain(comm, LOOM_ALLREDUCE, 1000, LOOM_FLOAT32, &attr, &st, nullptr);
    expect(st == LOOM_ERR_NOT_APPLICABLE, "dims on a star: " + std::to_string(st));
    expect(std::strstr(loom_last_error_message(), "allowed for this call") != nullptr,
           std::string("message: ") + loom_last_error_message());
    attr.algorithm = "inc";  // no switch: an error naming inc, the reason and what applies
    e              = explain(comm, LOOM_ALLREDUCE, 1000, LOOM_FLOAT32, &attr, &st, nullptr);
    expect(st == LOOM_ERR_NOT_APPLICABLE, "inc without a switch: " + std::to_string(st));
    expect(std::strstr(loom_last_error_message(), "allreduce inc: no aggregation node") &&
               std::strstr(loom_last_error_message(), "allowed for this call"),
           std::string("message: ") + loom_last_error_message());
    std::string text;
    e = explain(comm, LOOM_ALLREDUCE, 1 << 20, LOOM_FLOAT32, nullptr, &st, &text);
    expect(text.find("choice: " + std::string(e.algorithm)) != std::string::npos &&
               text.find("excluded") != std::string::npos &&
               text.find("no aggregation node") != std::string::npos,
           "explain text:\n" + text);
    expect(loom_comm_explain(comm, static_cast<loom_collective_t>(42), 1, LOOM_FLOAT32, LOOM_SUM, 0,
                             nullptr, &e, nullptr, 0) == LOOM_ERR_INVALID_ARGUMENT,
           "unknown primitive accepted");
    expect(loom_comm_explain(comm, LOOM_REDUCE, 1, LOOM_FLOAT32, LOOM_SUM, size_, nullptr, &e,
                             nullptr, 0) == LOOM_ERR_INVALID_ARGUMENT,
           "root out of range accepted");
}

uint64_t sent_bytes(loom_comm_t comm) {
    loom_traffic_t t;
    t.struct_size = sizeof t;
    expect(loom_comm_traffic(comm, &t) == LOOM_SUCCESS, "loom_comm_traffic");
    return t.sent_bytes;
}

void tuned_calls_and_traffic(loom_comm_t comm) {
    // The tuner's choices run and give exact sums at every size.
    for (size_t count = 1; count <= (size_t{4} << 20); count *= 8) {
        std::vector<int32_t> in(count, rank_ + 1), out(count, -1);
        loom_status_t st = loom_allreduce(comm, in.data(), out.data(), count, LOOM_INT32, LOOM_SUM,
                                          nullptr, nullptr);
        expect(st == LOOM_SUCCESS, std::string("allreduce: ") + loom_last_error_message());
        int32_t want = size_ * (size_ + 1) / 2;
        size_t wrong = 0;
        for (int32_t v : out) {
            wrong += v != want;
        }
        expect(wrong == 0, std::to_string(wrong) + " wrong of " + std::to_string(count));
    }
    // Ring all-reduce: each rank sends 2(N-1) blocks of M/N.
    const size_t block = 1024, count = block * size_t(size_);
    std::vector<float> in(count, 1.0f), out(count);
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.algorithm  = "ring";
    uint64_t before = sent_bytes(comm);
    loom_allreduce(comm, in.data(), out.data(), count, LOOM_FLOAT32, LOOM_SUM, &attr, nullptr);
    uint64_t sent = sent_bytes(comm) - before;
    expect(sent == 2 * uint64_t(size_ - 1) * block * 4,
           "ring all-reduce sent " + std::to_string(sent) + " bytes");
    // Pairwise all-to-all: N-1 blocks of `block` elements.
    std::vector<float> a2a_in(count, 2.0f), a2a_out(count);
    attr.algorithm = "pairwise";
    before         = sent_bytes(comm);
    loom_alltoall(comm, a2a_in.data(), a2a_out.data(), block, LOOM_FLOAT32, &attr, nullptr);
    sent = sent_bytes(comm) - before;
    expect(sent == uint64_t(size_ - 1) * block * 4,
           "pairwise all-to-all sent " + std::to_string(sent) + " bytes");
}

void calibrate(loom_comm_t comm, const std::string& rank0_file) {
    loom_calibration_t cal;
    cal.struct_size = sizeof cal;
    expect(loom_comm_calibrate(comm, 0, &cal) == LOOM_SUCCESS,
           std::string("calibrate: ") + loom_last_error_message());
    expect(std::string(cal.source) == "measured", std::string("source ") + cal.source);
    expect(cal.alpha_s > 0 && cal.alpha_s < 0.1 && cal.bw_bytes_per_s > 1e6 &&
               cal.reduce_bytes_per_s > 1e6,
           "implausible figures");
    uint64_t alpha_bits = 0;
    std::memcpy(&alpha_bits, &cal.alpha_s, sizeof alpha_bits);
    expect(same_everywhere(comm, alpha_bits), "ranks adopted different figures");
    if (rank_ == 0) {
        std::ifstream in(rank0_file);
        std::stringstream ss;
        ss << in.rdbuf();
        std::string text = ss.str();
        expect(text.find("host=" + host()) != std::string::npos &&
                   text.find("source=measured") != std::string::npos,
               "rank 0's file after calibrate:\n" + text);
        std::printf("rank 0: calibrated alpha %.2f us, BW %.2f GB/s, reduce %.2f GB/s\n",
                    cal.alpha_s * 1e6, cal.bw_bytes_per_s / 1e9, cal.reduce_bytes_per_s / 1e9);
    }
}

// Runs one call of `coll` (float32 sum, root 0; buffers large enough for every primitive).
loom_status_t run(loom_comm_t comm, loom_collective_t coll, size_t count,
                  const loom_coll_attr_t* attr) {
    std::vector<float> in(std::max<size_t>(1, count * size_t(size_)), 1.0f), out(in.size());
    switch (coll) {
        case LOOM_BROADCAST:
            return loom_broadcast(comm, in.data(), out.data(), count, LOOM_FLOAT32, 0, attr,
                                  nullptr);
        case LOOM_REDUCE:
            return loom_reduce(comm, in.data(), out.data(), count, LOOM_FLOAT32, LOOM_SUM, 0, attr,
                               nullptr);
        case LOOM_REDUCE_SCATTER:
            return loom_reduce_scatter(comm, in.data(), out.data(), count, LOOM_FLOAT32, LOOM_SUM,
                                       attr, nullptr);
        case LOOM_ALLGATHER:
            return loom_allgather(comm, in.data(), out.data(), count, LOOM_FLOAT32, attr, nullptr);
        case LOOM_ALLTOALL:
            return loom_alltoall(comm, in.data(), out.data(), count, LOOM_FLOAT32, attr, nullptr);
        default:
            return loom_allreduce(comm, in.data(), out.data(), count, LOOM_FLOAT32, LOOM_SUM, attr,
                                  nullptr);
    }
}

// For a grid of (primitive, count, named algorithm or none), loom_comm_explain's choice is
// what the call then runs (the communicator's record of its last call), and an explicit
// algorithm that cannot run fails both alike, with the same status. Run under several
// LOOM_ALGO settings and transports (run_tuner.sh); an `inc` named without an aggregation
// node fails, naming it, and never runs another algorithm.
int explain_matches_run() {
    loom_comm_t comm = nullptr;
    if (loom_comm_create(nullptr, &comm) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom_comm_create: %s\n", loom_last_error_message());
        return 1;
    }
    rank_                           = loom_comm_rank(comm);
    size_                           = loom_comm_size(comm);
    const loom_collective_t colls[] = {LOOM_BROADCAST,      LOOM_REDUCE,    LOOM_ALLREDUCE,
                                       LOOM_REDUCE_SCATTER, LOOM_ALLGATHER, LOOM_ALLTOALL};
    const char* names[]             = {nullptr,        "ring",     "binomial", "recursive-doubling",
                                       "rabenseifner", "pairwise", "bruck",    "dims",
                                       "inc"};
    const size_t counts[]           = {0, 1, 7, 1000, size_t{1} << 16};
    int compared = 0, failures_alike = 0;
    for (loom_collective_t coll : colls) {
        for (size_t count : counts) {
            for (const char* name : names) {
                loom_coll_attr_t attr;
                loom_coll_attr_init(&attr);
                attr.algorithm = name;
                loom_status_t est;
                loom_explain_t e = explain(comm, coll, count, LOOM_FLOAT32, &attr, &est, nullptr);
                std::string what = "primitive " + std::to_string(coll) + " count " +
                                   std::to_string(count) + " algorithm " + (name ? name : "(none)");
                if (est == LOOM_ERR_INVALID_ARGUMENT && name) {
                    continue;  // not a name of this primitive: nothing to run
                }
                loom_status_t rst = run(comm, coll, count, &attr);
                expect(rst == est, what + ": explain " + std::to_string(est) + ", the call " +
                                       std::to_string(rst) + " (" + loom_last_error_message() +
                                       ")");
                if (est != LOOM_SUCCESS) {
                    ++failures_alike;
                    if (name && std::string(name) == "inc") {
                        expect(est == LOOM_ERR_NOT_APPLICABLE &&
                                   std::strstr(loom_last_error_message(), "inc") != nullptr &&
                                   std::strstr(loom_last_error_message(), "aggregation node"),
                               what + ": " + loom_last_error_message());
                    }
                    continue;
                }
                const loom::algorithms::algorithm* ran = comm->impl->last_algorithm();
                expect(ran != nullptr && ran->name == e.algorithm,
                       what + ": explain chose " + e.algorithm + " (" + e.origin +
                           "), the call ran " +
                           (ran ? std::string(ran->name) : std::string("nothing")));
                expect(std::string(e.origin) != "in-network fallback", what + ": a fallback");
                ++compared;
            }
        }
    }
    expect(compared > 0 && failures_alike > 0, "the grid compared nothing");
    if (rank_ == 0) {
        std::printf("rank 0: %d calls ran what explain chose, %d failed alike\n", compared,
                    failures_alike);
    }
    std::printf("rank %d of %d: %d checks, %d failed\n", rank_, size_, checks, failed);
    loom_comm_destroy(comm);
    return failed == 0 ? 0 : 1;
}

}  // namespace

// `cost_class` (or null): the calibration's transport, the class of what carries messages.
int expect_source(const char* source, const char* cost_class) {
    loom_comm_t comm = nullptr;
    if (loom_comm_create(nullptr, &comm) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom_comm_create: %s\n", loom_last_error_message());
        return 1;
    }
    rank_ = loom_comm_rank(comm);
    size_ = loom_comm_size(comm);
    loom_calibration_t cal;
    cal.struct_size = sizeof cal;
    expect(loom_comm_calibration(comm, &cal) == LOOM_SUCCESS, "loom_comm_calibration");
    expect(std::string(cal.source) == source,
           std::string("source ") + cal.source + ", expected " + source);
    if (cost_class) {
        expect(std::string(cal.transport) == cost_class,
               std::string("cost class ") + cal.transport + ", expected " + cost_class);
    }
    uint64_t alpha_bits = 0;
    std::memcpy(&alpha_bits, &cal.alpha_s, sizeof alpha_bits);
    expect(same_everywhere(comm, alpha_bits), "ranks hold different figures");
    tuned_calls_and_traffic(comm);
    std::printf("rank %d of %d: %d checks, %d failed\n", rank_, size_, checks, failed);
    loom_comm_destroy(comm);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
    if ((argc == 3 || argc == 4) && std::string(argv[1]) == "--expect-source") {
        return expect_source(argv[2], argc == 4 ? argv[3] : nullptr);
    }
    if (argc == 2 && std::string(argv[1]) == "--explain-matches-run") {
        return explain_matches_run();
    }
    if (argc != 2) {
        std::fprintf(stderr,
                     "usage: test_api_tuner WORKDIR | --expect-source SOURCE [CLASS] | "
                     "--explain-matches-run\n");
        return 2;
    }
    const char* r         = std::getenv("LOOM_RANK");
    const char* transport = std::getenv("LOOM_TRANSPORT");
    std::string mine      = std::string(argv[1]) + "/rank-" + (r ? r : "0") + ".txt";
    {
        int k = r ? std::atoi(r) + 1 : 1;
        std::ofstream out(mine);
        out << "host=" << host() << " transport=" << (transport ? transport : "shm")
            << " alpha_us=" << k << " bw_GBps=" << k << " reduce_GBps=8\n";
    }
    setenv("LOOM_CALIBRATION_FILE", mine.c_str(), 1);
    loom_comm_t comm = nullptr;
    if (loom_comm_create(nullptr, &comm) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom_comm_create: %s\n", loom_last_error_message());
        return 1;
    }
    rank_ = loom_comm_rank(comm);
    size_ = loom_comm_size(comm);
    agreed_parameters(comm);
    identical_choices(comm);
    explicit_choices(comm);
    tuned_calls_and_traffic(comm);
    calibrate(comm, std::string(argv[1]) + "/rank-0.txt");
    identical_choices(comm);  // again, with the measured figures
    std::printf("rank %d of %d: %d checks, %d failed\n", rank_, size_, checks, failed);
    loom_comm_destroy(comm);
    return failed == 0 ? 0 : 1;
}
