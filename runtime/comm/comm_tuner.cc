// SPDX-License-Identifier: Apache-2.0
// The tuner inside a communicator: the machine parameters every rank agrees on, the cached
// choice per call, calibration and explanations (runtime/tuner holds the pure parts).
//
// Agreement: rank 0 reads the calibration file (or decides to measure) and broadcasts one
// line; every rank, rank 0 included, parses that same line, so all predict with identical
// numbers and choose identically. The broadcasts made here name their algorithm (binomial),
// because the tuner cannot choose before its parameters are agreed.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "comm/comm.hh"
#include "kernels/reduce.hh"
#include "tuner/calibration_checks.hh"
#include "tuner/tuner_params.hh"

namespace loom::comm {
namespace {

constexpr size_t line_bytes         = 512;
constexpr const char* measure_token = "measure";

// One calibration measurement: an all-reduce of `bytes` with a named algorithm.
struct measure_plan {
    int warmup, reps;
    size_t bytes;
    const char* algorithm;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// The tuner's cost class of what carries the endpoint's messages (tuner::defaults_for): the
// driver says what it is, whatever its name (fwd:shm, fault:tcp).
const char* cost_class(const drivers::endpoint& ep) {
    switch (ep.capabilities().carrier) {
        case drivers::medium::network:
            return "tcp";
        case drivers::medium::loopback:
            return "self";
        case drivers::medium::shared_memory:
            break;
    }
    return "shm";
}

std::string calibration_file(const std::string& configured) {
    return tuner::calibration_path(configured, tuner::params::xdg_cache_home.get(),
                                   tuner::params::home.get());
}

// The judge's limits: fixed, as the bounds are (calibration_checks.hh).
const tuner::plausibility_limits limits{};

// This host's tcp α for the same rank count, from the file (< 0 when there is none): a
// shared-memory α above it was measured under load.
double file_tcp_alpha(const std::string& path, const std::string& host, int ranks) {
    auto tcp = tuner::load(path, host, "tcp", ranks);
    return tcp && *tcp ? (*tcp)->alpha_s : -1;
}

// α estimated over `repeats` successive groups of the samples: the median of each group,
// divided by the rounds; the spread is (largest − smallest) / median of the estimates.
double alpha_spread(const std::vector<double>& samples, int repeats, double rounds) {
    std::vector<double> estimates;
    size_t per = samples.size() / static_cast<size_t>(repeats);
    for (int k = 0; k < repeats && per > 0; ++k) {
        auto from = samples.begin() + static_cast<long>(per * static_cast<size_t>(k));
        estimates.push_back(median(std::vector<double>(from, from + static_cast<long>(per))) /
                            rounds);
    }
    if (estimates.size() < 2) {
        return -1;
    }
    auto [lo, hi] = std::minmax_element(estimates.begin(), estimates.end());
    double mid    = median(estimates);
    return mid > 0 ? (*hi - *lo) / mid : -1;
}

// What rank 0 logs instead of storing: why, and what the communicator uses instead.
void warn_not_stored(const std::string& path, const std::string& why) {
    LOOM_LOG_WARN(log::subsystem::init,
                  "rank 0: calibration measured twice and not stored in %s: %s; the tuner uses "
                  "its defaults (measure again on a quiet machine: loom-bench calibrate)",
                  path.c_str(), why.c_str());
}

}  // namespace

status communicator::share_machine_params(std::string* line) {
    if (size() == 1) {
        return status::ok();
    }
    char buf[line_bytes] = {};
    if (rank() == 0) {
        std::memcpy(buf, line->data(), std::min(line->size(), line_bytes - 1));
    }
    loom_coll_attr_t attr;
    loom_coll_attr_init(&attr);
    attr.algorithm = "binomial";
    call_args a;
    a.kind    = call_kind::broadcast;
    a.sendbuf = buf;
    a.recvbuf = buf;
    a.count   = line_bytes;
    a.dtype   = LOOM_UINT8;
    a.root    = 0;
    a.attr    = &attr;
    if (loom_status_t code = run_blocking(a); code != LOOM_SUCCESS) {
        return status(
            code, "rank " + std::to_string(rank()) +
                      ": agreeing on the tuner's parameters failed: " + loom_last_error_message());
    }
    *line = std::string(buf, strnlen(buf, line_bytes));
    return status::ok();
}

status communicator::measure(bool thorough, tuner::machine_params* p) {
    *p         = tuner::defaults_for(cost_class(*endpoint_));
    p->source  = "measured";
    p->ranks   = size();
    p->version = loom_version();
    if (rank() == 0) {
        // The load before this measurement adds its own: what else the host was running.
        double load[1];
        p->load1 = getloadavg(load, 1) == 1 ? load[0] : -1;
        p->cpus  = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
        // The reduction kernel the engine runs, on buffers out of cache for the full pass.
        const size_t count = (thorough ? size_t{8} << 20 : size_t{256} << 10) / sizeof(float);
        std::vector<float> x(count, 1.0f), y(count, 2.0f), z(count);
        kernels::reduce_fn sum = kernels::reduce_kernel(LOOM_FLOAT32, LOOM_SUM);
        double best            = 1e30;
        for (int rep = 0; rep < (thorough ? 20 : 5); ++rep) {
            double t0 = now_s();
            sum(z.data(), x.data(), y.data(), count);
            best                        = std::min(best, now_s() - t0);
            x[static_cast<size_t>(rep)] = z[static_cast<size_t>(rep)];  // keep the work live
        }
        p->reduce_bytes_per_s = static_cast<double>(count * sizeof(float)) / best;
    }
    p->alpha_switch_s = -1;  // the aggregation node is not measured: as far as a peer
    if (size() < 2) {
        return status::ok();
    }
    // α and BW are fitted to collectives of this communicator, all ranks at once, so they
    // carry what this N costs here (ranks sharing cores, memory bandwidth shared by every
    // pair): α from the median 8-byte recursive-doubling all-reduce divided by its rounds,
    // BW from the best large ring all-reduce less its α and reduction parts. Rank 0's
    // clock decides; the others only take part.
    const measure_plan small{thorough ? 200 : 10, thorough ? 1000 : 40, 8, "recursive-doubling"};
    const measure_plan large{thorough ? 2 : 1, thorough ? 6 : 3,
                             thorough ? size_t{16} << 20 : size_t{1} << 20, "ring"};
    std::vector<float> in(large.bytes / sizeof(float), 1.0f), out(in.size());
    auto timed = [&](const measure_plan& m, std::vector<double>* times) -> status {
        loom_coll_attr_t attr;
        loom_coll_attr_init(&attr);
        attr.algorithm = m.algorithm;
        call_args a;
        a.kind    = call_kind::allreduce;
        a.sendbuf = in.data();
        a.recvbuf = out.data();
        a.count   = m.bytes / sizeof(float);
        a.dtype   = LOOM_FLOAT32;
        a.op      = LOOM_SUM;
        a.attr    = &attr;
        call_args barrier;
        barrier.kind = call_kind::barrier;
        for (int i = 0; i < m.warmup + m.reps; ++i) {
            loom_status_t code = run_blocking(barrier);
            double t0          = now_s();
            if (code == LOOM_SUCCESS) {
                code = run_blocking(a);
            }
            if (code != LOOM_SUCCESS) {
                return status(code, std::string("calibration: ") + loom_last_error_message());
            }
            if (i >= m.warmup) {
                times->push_back(now_s() - t0);
            }
        }
        return status::ok();
    };
    std::vector<double> small_t, large_t, flat_t;
    LOOM_CHECK(timed(small, &small_t));
    LOOM_CHECK(timed(large, &large_t));
    // α_flat: the median 8-byte flat all-reduce, where the node's flat segment is up (its
    // β term is negligible at 8 bytes; flat.cc).
    const measure_plan flat{small.warmup, small.reps, 8, "flat"};
    if (flat_ready_) {
        LOOM_CHECK(timed(flat, &flat_t));
    }
    if (rank() != 0) {
        return status::ok();
    }
    if (!flat_t.empty()) {
        p->alpha_flat_s = median(flat_t);
    }
    auto model = [&](const measure_plan& m) {
        algorithms::call c;
        c.coll       = schedule::collective::allreduce;
        c.nranks     = size();
        c.count      = static_cast<int64_t>(m.bytes / sizeof(float));
        c.dtype_size = sizeof(float);
        c.topo       = settings_.topo;
        c.ties       = settings_.ties;
        const algorithms::algorithm& a =
            *algorithms::find(schedule::collective::allreduce, m.algorithm);
        return std::pair{algorithms::predict(a, c, double(m.bytes), settings_.ports),
                         tuner::local_bytes(a, c)};
    };
    algorithms::cost small_cost   = model(small).first;
    auto [large_cost, large_work] = model(large);
    p->alpha_s                    = median(small_t) / std::max(1.0, small_cost.n_alpha);
    p->repeats                    = 3;
    p->spread     = alpha_spread(small_t, p->repeats, std::max(1.0, small_cost.n_alpha));
    double t      = *std::min_element(large_t.begin(), large_t.end());
    double moving = t - large_cost.n_alpha * p->alpha_s -
                    (large_work.reduced + large_work.copied) / p->reduce_bytes_per_s;
    p->bw_bytes_per_s = large_cost.n_beta * double(large.bytes) / std::max(moving, 0.1 * t);
    return status::ok();
}

// Rank 0's reading of the file: the line to agree on, or measure_token. A measured line that
// is implausible, stale or was taken under load does not steer the tuner for ever: it is
// measured again (LOOM_CALIBRATE=auto) or, where it cannot be, the defaults replace an
// implausible or stale one; a busy one serves until the host is quieter. The log says which.
std::string communicator::read_machine_params(const std::string& path) {
    bool can_measure = settings_.calibrate_auto && size() >= 2;
    auto loaded      = tuner::load(path, machine_.host, machine_.transport, size());
    if (!loaded) {
        LOOM_LOG_WARN(log::subsystem::init, "rank 0: %s; the tuner uses its defaults",
                      loaded.error().message().c_str());
        return tuner::to_line(machine_);
    }
    if (!*loaded) {
        return can_measure ? measure_token : tuner::to_line(machine_);
    }
    const tuner::machine_params& p = **loaded;
    if (!p.measured) {  // written by hand: the user's word
        return tuner::to_line(p);
    }
    std::string why = tuner::implausible(p, file_tcp_alpha(path, p.host, size()), limits);
    if (why.empty()) {
        why = tuner::stale(p, std::time(nullptr), limits);
    }
    if (!why.empty()) {
        LOOM_LOG_WARN(log::subsystem::init,
                      "rank 0: the calibration line for %s %s in %s is ignored: %s; %s",
                      p.host.c_str(), p.transport.c_str(), path.c_str(), why.c_str(),
                      can_measure ? "measuring again" : "the tuner uses its defaults");
        return can_measure ? measure_token : tuner::to_line(machine_);
    }
    if (std::string load = tuner::busy(p); !load.empty()) {
        // Measured again once the host is quieter; until then, the busy figures serve.
        double now[1];
        bool quieter = getloadavg(now, 1) == 1 && now[0] <= p.cpus;
        LOOM_LOG_INFO(log::subsystem::init, "rank 0: the calibration line for %s %s in %s: %s; %s",
                      p.host.c_str(), p.transport.c_str(), path.c_str(), load.c_str(),
                      quieter && can_measure ? "the host is quieter now: measuring again"
                                             : "used until it can be measured on a quieter host");
        if (quieter && can_measure) {
            return measure_token;
        }
    }
    return tuner::to_line(p);
}

// Measures (every rank) until rank 0 finds the figures plausible, twice at most; rank 0
// stores them, or says why not and agrees on the defaults. Returns the agreed line.
result<std::string> communicator::measure_plausibly(const std::string& path, bool thorough,
                                                    const char* method) {
    std::string line;
    for (int attempt = 0; attempt < 2; ++attempt) {
        tuner::machine_params measured;
        LOOM_CHECK(measure(thorough, &measured));
        measured.method = method;
        if (rank() == 0) {
            std::string why =
                size() < 2 ? std::string()
                           : tuner::implausible(
                                 measured, file_tcp_alpha(path, measured.host, size()), limits);
            if (why.empty()) {
                line = tuner::to_line(measured);
                save_calibration(path, measured);
            } else if (attempt == 0) {
                LOOM_LOG_INFO(log::subsystem::init, "rank 0: calibration: %s; measuring again",
                              why.c_str());
                line = measure_token;
            } else {
                warn_not_stored(path, why);
                line = tuner::to_line(machine_);
            }
        }
        LOOM_CHECK(share_machine_params(&line));
        if (line != measure_token) {
            break;
        }
    }
    return line;
}

// An unwritable file costs only the saving: the figures still serve this communicator.
void communicator::save_calibration(const std::string& path, const tuner::machine_params& p) {
    if (status st = tuner::save(path, p); !st) {
        LOOM_LOG_WARN(log::subsystem::init,
                      "rank 0: %s; the measured figures serve this communicator only",
                      st.message().c_str());
    }
}

status communicator::agree_machine_params() {
    machine_               = tuner::defaults_for(cost_class(*endpoint_));
    const std::string path = calibration_file(settings_.calibration_file);
    std::string line;
    if (rank() == 0) {
        line = read_machine_params(path);
    }
    LOOM_CHECK(share_machine_params(&line));
    if (line == measure_token) {
        LOOM_ASSIGN(line, measure_plausibly(path, false, "auto"));
    }
    return adopt_machine_params(size() == 1 ? tuner::to_line(machine_) : line, path);
}

status communicator::adopt_machine_params(const std::string& line, const std::string& path) {
    auto agreed = tuner::from_line(line);
    if (!agreed) {
        return status(agreed.error())
            .prefix("rank " + std::to_string(rank()) + ": the tuner's parameters from rank 0: ");
    }
    machine_      = std::move(agreed).value();
    machine_.file = path;
    decisions_.clear();
    plans_.clear();  // cached plans hold choices made with other figures
    return status::ok();
}

status communicator::calibrate(bool thorough) {
    const std::string path = calibration_file(settings_.calibration_file);
    if (size() == 1) {  // no collective to time: keep α and BW, take the reduction figure
        tuner::machine_params measured;
        LOOM_CHECK(measure(thorough, &measured));
        measured.alpha_s        = machine_.alpha_s;
        measured.bw_bytes_per_s = machine_.bw_bytes_per_s;
        measured.method         = thorough ? "thorough" : "calibrate";
        save_calibration(path, measured);
        return adopt_machine_params(tuner::to_line(measured), path);
    }
    LOOM_ASSIGN(std::string line,
                measure_plausibly(path, thorough, thorough ? "thorough" : "calibrate"));
    return adopt_machine_params(line, path);
}

const algorithms::algorithm* communicator::tuned_choice(const algorithms::call& c,
                                                        loom_dtype_t dtype, loom_op_t op) {
    const tuner::in_network_state inc = in_network_for(c, dtype, op);
    const double bytes                = tuner::payload_bytes(c);
    const algorithms::algorithm* a    = decisions_.find(c, inc.usable, bytes, inc.flat_usable);
    if (!a) {
        tuner::ranking r =
            tuner::rank_algorithms(tuner::representative(c, bytes), machine_, settings_.ports, inc);
        a = r.best;
        decisions_.put(c, inc.usable, bytes, a, inc.flat_usable);
        if (settings_.explain && rank() == 0) {
            tuner::ranking exact = tuner::rank_algorithms(c, machine_, settings_.ports, inc);
            std::fprintf(
                stderr, "loom explain: %s",
                tuner::explain_text(c, exact, a, "tuner", machine_, settings_.ports).c_str());
        }
    }
    if (a && algorithms::check_call(*a, c)) {
        return a;
    }
    // The bucket's choice cannot run this exact call (a count or root it excludes).
    return tuner::rank_algorithms(c, machine_, settings_.ports, inc).best;
}

result<communicator::explanation> communicator::explain(const call_args& a) {
    call_options o;
    LOOM_CHECK(check_args(a, rank(), size(), &o));
    loom_dtype_t dtype = dtype_of(a);
    loom_op_t op       = kind_reduces(a.kind) ? op_of(a) : LOOM_SUM;
    algorithms::call c = to_call(a, o, rank(), size(), settings_.topo, settings_.ties);
    LOOM_ASSIGN(choice chosen, choose(a.kind, c, o.algorithm, dtype, op));
    explanation e;
    e.chosen  = chosen.algo;
    e.origin  = chosen.origin;
    e.ranking = tuner::rank_algorithms(c, machine_, settings_.ports, in_network_for(c, dtype, op));
    e.predicted_s = tuner::predict_s(*e.chosen, c, e.ranking.bytes, machine_, settings_.ports);
    e.text = tuner::explain_text(c, e.ranking, e.chosen, e.origin, machine_, settings_.ports);
    return e;
}

}  // namespace loom::comm
