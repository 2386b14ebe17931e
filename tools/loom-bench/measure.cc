// The timing method, the one thing loom-bench and the peers' harnesses in bench/ must do
// alike: per size, W warm-up calls; then ITERS times a barrier and one call between two
// CLOCK_MONOTONIC readings; then the per-iteration entry and exit times are reduced across
// ranks (max), so an iteration lasts from the last rank entering to the last rank leaving
// (the ranks of one host share the clock). Nothing is allocated between the readings.
#include <time.h>

#include <algorithm>
#include <cstring>

#include "bench.hh"

namespace loom::bench {
namespace {

// Bytes this rank has handed to its transport so far; false when loom cannot say.
bool traffic_now(loom_comm_t comm, uint64_t* bytes) {
    loom_traffic_t t{};
    t.struct_size = sizeof t;
    if (loom_comm_traffic(comm, &t) != LOOM_SUCCESS) {
        return false;
    }
    *bytes = t.sent_bytes + t.switch_sent_bytes;
    return true;
}

}  // namespace

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

loom_status_t measure(bench_state& s, const shape& sh, const loom_coll_attr_t* attr, bool probe,
                      measured* out) {
    const call_spec& c = s.spec;
    io p               = io_for(c, sh, s.bufs);
    fill_inputs(c, sh, p);
    loom_status_t st = LOOM_SUCCESS;
    for (int i = 0; i < std::max(s.o.warmup, probe ? 1 : 0) && st == LOOM_SUCCESS; ++i) {
        st = call_once(s.comm, c, sh, p, attr);
    }
    if (st != LOOM_SUCCESS) {
        return st;
    }
    // Traffic is read around each call, outside the timed span, so the barriers' bytes are
    // not counted as the call's.
    uint64_t sent = 0, before = 0, after = 0;
    bool traffic = true;
    int iters    = s.o.iters;
    for (int i = 0; i < iters && st == LOOM_SUCCESS; ++i) {
        st = loom_barrier(s.comm, nullptr, nullptr);
        if (st != LOOM_SUCCESS) {
            break;
        }
        traffic    = traffic_now(s.comm, &before) && traffic;
        s.enter[i] = now_s();
        st         = call_once(s.comm, c, sh, p, attr);
        s.leave[i] = now_s();
        traffic    = traffic_now(s.comm, &after) && traffic;
        sent += after - before;
    }
    if (st != LOOM_SUCCESS) {
        return st;
    }
    st = loom_allreduce(s.comm, s.enter.data(), s.enter.data(), iters, LOOM_FLOAT64, LOOM_MAX,
                        nullptr, nullptr);
    if (st == LOOM_SUCCESS) {
        st = loom_allreduce(s.comm, s.leave.data(), s.leave.data(), iters, LOOM_FLOAT64, LOOM_MAX,
                            nullptr, nullptr);
    }
    if (st != LOOM_SUCCESS) {
        return st;
    }
    s.times.resize(static_cast<size_t>(iters));  // sized once at startup: no allocation
    for (int i = 0; i < iters; ++i) {
        s.times[i] = s.leave[i] - s.enter[i];
    }
    out->time = summarize(s.times);

    // -c after the timed loop, from fresh inputs, as nccl-tests does: in place, the timed
    // calls have reduced the input into itself ITERS times over.
    uint64_t wrong = 0;
    if (s.o.check) {
        fill_inputs(c, sh, p);
        if (!c.inplace) {
            std::memset(s.bufs.recv, 0xa5, s.bufs.bytes);  // a result not written shows
        }
        st = call_once(s.comm, c, sh, p, attr);
        if (st != LOOM_SUCCESS) {
            return st;
        }
        wrong = count_wrong(c, sh, p);
        st =
            loom_allreduce(s.comm, &wrong, &out->wrong, 1, LOOM_UINT64, LOOM_SUM, nullptr, nullptr);
        if (st != LOOM_SUCCESS) {
            return st;
        }
    }
    // Unknown traffic travels as -1 so that the max over ranks stays unknown only when
    // every rank lacks it (the library is the same everywhere, so all or none).
    double per_call = traffic ? static_cast<double>(sent) / iters : -1;
    st = loom_allreduce(s.comm, &per_call, &out->sent_bytes, 1, LOOM_FLOAT64, LOOM_MAX, nullptr,
                        nullptr);
    return st;
}

}  // namespace loom::bench
