// SPDX-License-Identifier: Apache-2.0
#include "tuner/tuner.hh"
#include "base/check.hh"

#include <algorithm>
#include <cmath>

namespace loom::tuner {

local_work local_bytes(const algorithms::algorithm& a, const algorithms::call& c) {
    using schedule::collective;
    // A rooted primitive's root does the most local work; otherwise rank 0 stands for all.
    const bool rooted = c.coll == collective::reduce || c.coll == collective::broadcast;
    auto steps        = algorithms::generate_rank(a, c, rooted ? c.root : 0);
    local_work w;
    if (!steps) {
        return w;
    }
    for (const schedule::step& s : steps->steps) {
        const double bytes = static_cast<double>(s.dst.count) * c.dtype_size;
        switch (s.kind) {
            case schedule::step_kind::recv_reduce:
            case schedule::step_kind::local_reduce:
                w.reduced += bytes;
                break;
            case schedule::step_kind::local_copy:
            case schedule::step_kind::recv_copy:  // the second destination is a copy
                w.copied += bytes;
                break;
            default:
                break;
        }
    }
    return w;
}

double predict_s(const algorithms::algorithm& a, const algorithms::call& c, double bytes,
                 const machine_params& p, algorithms::port_model ports) {
    if (a.two_links_at_once && !c.topo.is_lattice()) {
        ports = algorithms::port_model::single_port;  // algorithm.hh: two_links_at_once
    }
    algorithms::cost k = algorithms::predict(a, c, bytes, ports);
    double t = k.time_s(p.alpha_s, p.bw_bytes_per_s, bytes, p.switch_alpha(), p.flat_alpha());
    if (p.reduce_bytes_per_s > 0) {
        local_work w = local_bytes(a, c);
        t += (w.reduced + w.copied) / p.reduce_bytes_per_s;
    }
    return t;
}

double payload_bytes(const algorithms::call& c) {
    schedule::schedule_info info;
    info.coll       = c.coll;
    info.nranks     = c.nranks;
    info.count      = c.count;
    info.dtype_size = c.dtype_size;
    return schedule::payload_bytes(info);
}

status admits(const algorithms::algorithm& a, const algorithms::call& c,
              const in_network_state& inc) {
    LOOM_CHECK(algorithms::check_call(a, c));
    if (a.in_network && !inc.usable) {
        return status(LOOM_ERR_NOT_APPLICABLE, inc.why_not);
    }
    if (a.node_local && !inc.flat_usable) {
        return status(LOOM_ERR_NOT_APPLICABLE, inc.flat_why_not);
    }
    return status::ok();
}

ranking rank_algorithms(const algorithms::call& c, const machine_params& p,
                        algorithms::port_model ports, const in_network_state& inc) {
    ranking out;
    out.bytes = payload_bytes(c);
    std::vector<candidate> excluded;
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        if (a->primitive != c.coll) {
            continue;
        }
        candidate k;
        k.algo = a;
        if (status st = admits(*a, c, inc); !st) {
            k.reason = st.message();
        } else {
            k.applicable = true;
            k.time_s     = predict_s(*a, c, out.bytes, p, ports);
            k.reason     = std::string(a->formula);
        }
        (k.applicable ? out.candidates : excluded).push_back(std::move(k));
    }
    std::stable_sort(out.candidates.begin(), out.candidates.end(),
                     [](const candidate& x, const candidate& y) { return x.time_s < y.time_s; });
    if (!out.candidates.empty()) {
        out.best = out.candidates.front().algo;
    }
    out.candidates.insert(out.candidates.end(), excluded.begin(), excluded.end());
    return out;
}

int size_bucket(double bytes) {
    if (bytes < 1) {
        return 0;
    }
    int exp = 0;
    std::frexp(bytes, &exp);  // bytes in [2^(exp-1), 2^exp)
    return std::min(exp, size_buckets - 1);
}

double bucket_middle(int bucket) {
    return bucket == 0 ? 0 : std::ldexp(std::sqrt(2.0), bucket - 1);
}

algorithms::call representative(const algorithms::call& c, double bytes) {
    algorithms::call r = c;
    if (bytes > 0 && c.count > 0) {
        double scale = bucket_middle(size_bucket(bytes)) / bytes;
        r.count      = std::max<int64_t>(1, std::llround(static_cast<double>(c.count) * scale));
    }
    return r;
}

size_t decision_cache::index(const algorithms::call& c, bool inc_usable, double bytes,
                             bool flat_usable) {
    size_t esize = c.dtype_size <= 1 ? 0 : c.dtype_size <= 2 ? 1 : c.dtype_size <= 4 ? 2 : 3;
    size_t prim  = static_cast<size_t>(c.coll);
    return (((prim * 4 + esize) * 2 + (inc_usable ? 1 : 0)) * 2 + (flat_usable ? 1 : 0)) *
               size_buckets +
           static_cast<size_t>(size_bucket(bytes));
}

}  // namespace loom::tuner
