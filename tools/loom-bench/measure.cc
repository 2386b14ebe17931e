// SPDX-License-Identifier: Apache-2.0
// The timing methods. Per size, W warm-up calls first; then either
//  loop (nccl-tests' way): a barrier, ITERS calls back to back between two CLOCK_MONOTONIC
//    readings, the mean per call on each rank, combined across ranks as -a says;
//  barrier (what loom-bench and the peers' harnesses in bench/peers must do alike): ITERS
//    times a barrier and one call between two readings; the per-iteration entry and exit
//    times are reduced across ranks (max), so an iteration lasts from the last rank entering
//    to the last rank leaving (the ranks of one host share the clock).
// Nothing is allocated between the readings.
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

namespace {

// loop: the mean per call on this rank, then one figure for all ranks (-a).
loom_status_t time_loop(bench_state& s, const call_spec& c, const shape& sh, const io& p,
                        const loom_coll_attr_t* attr, uint64_t* sent, bool* traffic,
                        measured* out) {
    uint64_t before = 0, after = 0;
    int iters        = s.o.iters;
    loom_status_t st = loom_barrier(s.comm, nullptr, nullptr);
    if (st != LOOM_SUCCESS) {
        return st;
    }
    *traffic  = traffic_now(s.comm, &before);
    double t0 = now_s();
    for (int i = 0; i < iters && st == LOOM_SUCCESS; ++i) {
        st = call_once(s.comm, c, sh, p, attr);
    }
    double mine = (now_s() - t0) / iters;
    *traffic    = traffic_now(s.comm, &after) && *traffic;
    *sent       = after - before;
    if (st != LOOM_SUCCESS) {
        return st;
    }
    loom_op_t op = LOOM_SUM;
    switch (s.o.average) {
        case averaging::rank0:
            mine = c.rank == 0 ? mine : 0;
            break;
        case averaging::min:
            op = LOOM_MIN;
            break;
        case averaging::max:
            op = LOOM_MAX;
            break;
        case averaging::mean:
            break;
    }
    double all = 0;
    st         = loom_allreduce(s.comm, &mine, &all, 1, LOOM_FLOAT64, op, nullptr, nullptr);
    if (s.o.average == averaging::mean) {
        all /= c.n;
    }
    out->time_s    = all;
    out->time.mean = all;
    out->time.p50 = out->time.p99 = -1;
    return st;
}

// barrier: one call per iteration between barriers; time = the median over iterations.
loom_status_t time_barrier(bench_state& s, const call_spec& c, const shape& sh, const io& p,
                           const loom_coll_attr_t* attr, uint64_t* sent, bool* traffic,
                           measured* out) {
    // Traffic is read around each call, outside the timed span, so the barriers' bytes are
    // not counted as the call's.
    uint64_t before = 0, after = 0;
    loom_status_t st = LOOM_SUCCESS;
    int iters        = s.o.iters;
    *traffic         = true;
    for (int i = 0; i < iters && st == LOOM_SUCCESS; ++i) {
        st = loom_barrier(s.comm, nullptr, nullptr);
        if (st != LOOM_SUCCESS) {
            break;
        }
        *traffic   = traffic_now(s.comm, &before) && *traffic;
        s.enter[i] = now_s();
        st         = call_once(s.comm, c, sh, p, attr);
        s.leave[i] = now_s();
        *traffic   = traffic_now(s.comm, &after) && *traffic;
        *sent += after - before;
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
    out->time   = summarize(s.times);
    out->time_s = out->time.p50;
    return st;
}

}  // namespace

loom_status_t measure(bench_state& s, const call_spec& c, const shape& sh,
                      const loom_coll_attr_t* attr, bool probe, measured* out) {
    io p = io_for(c, sh, s.bufs);
    fill_inputs(c, sh, p);
    loom_status_t st = LOOM_SUCCESS;
    for (int i = 0; i < std::max(s.o.warmup, probe ? 1 : 0) && st == LOOM_SUCCESS; ++i) {
        st = call_once(s.comm, c, sh, p, attr);
    }
    if (st != LOOM_SUCCESS) {
        return st;
    }
    uint64_t sent = 0;
    bool traffic  = false;
    st = s.o.timing == timing_mode::loop ? time_loop(s, c, sh, p, attr, &sent, &traffic, out)
                                         : time_barrier(s, c, sh, p, attr, &sent, &traffic, out);
    if (st != LOOM_SUCCESS) {
        return st;
    }
    int iters = s.o.iters;

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
