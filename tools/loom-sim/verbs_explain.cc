// SPDX-License-Identifier: Apache-2.0
// loom-sim explain: what a communicator's tuner would choose for a call, offline, on any
// fabric — the candidates ranked by predicted time, why the others are excluded, the
// choice. The same code as the runtime (runtime/tuner): the choice is made at the middle
// of the call's size bucket, as a communicator caches it.
//   loom-sim explain --collective allreduce --ranks 512 --bytes 8,1M,64M
//                    [--topology T] [--segments P] [--alpha S --bw B | --calibration FILE]
//                    [--alpha-switch S] [--reduce-bw B] [--switch] [--port-model MODEL]
//                    [--json]
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "base/check.hh"
#include "loom_sim.hh"
#include "tuner/tuner.hh"

namespace loom::sim_tool {
namespace {

struct explain_flags {
    call_flags call;
    std::string bytes;
    link_flags link;
    std::string reduce_bw;
    calibration_flags calibration;
    bool in_network = false;
    bool json       = false;
};

// The calibration file's line, else the link flags; either way --reduce-bw and
// --alpha-switch where given.
result<tuner::machine_params> parameters(const explain_flags& f, const cost_model& link) {
    LOOM_ASSIGN(auto from_file,
                load_calibration(f.calibration, f.link.alpha_or_bw_given(), f.call.ranks));
    tuner::machine_params p;
    if (from_file) {
        p = *from_file;
    } else {
        p.alpha_s            = link.alpha_s;
        p.bw_bytes_per_s     = link.bw_bytes_per_s;
        p.reduce_bytes_per_s = 0;  // not counted unless --reduce-bw says how fast
        p.transport          = "model";
        p.source             = "flags";
    }
    if (!f.reduce_bw.empty()) {
        LOOM_ASSIGN(p.reduce_bytes_per_s, parse_rate("--reduce-bw", f.reduce_bw));
    }
    if (!f.link.alpha_switch.empty()) {
        p.alpha_switch_s = link.alpha_switch_s;
    }
    return p;
}

// Each algorithm's P under --segments auto (empty otherwise).
using segments_by_algorithm = std::map<const algorithms::algorithm*, int>;

nlohmann::json explanation_json(const algorithms::call& c, const tuner::ranking& r,
                                const algorithms::algorithm* chosen,
                                const segments_by_algorithm& chosen_p) {
    nlohmann::json cands = nlohmann::json::array();
    for (const auto& k : r.candidates) {
        nlohmann::json o = {{"algorithm", std::string(k.algo->name)}, {"applicable", k.applicable}};
        if (k.applicable) {
            o["predicted_s"] = k.time_s;
            o["formula"]     = k.reason;
            if (auto it = chosen_p.find(k.algo); it != chosen_p.end()) {
                o["segments"] = it->second;
            }
        } else {
            o["excluded_because"] = k.reason;
        }
        cands.push_back(o);
    }
    return {{"collective", std::string(schedule::collective_name(c.coll))},
            {"ranks", c.nranks},
            {"topology", c.topo.to_string()},
            {"bytes", r.bytes},
            {"choice", chosen ? std::string(chosen->name) : std::string()},
            {"candidates", cands}};
}

// The tuner's ranking with each candidate at its own least-time P (--segments auto): the
// same admission and time as tuner::rank_algorithms, P shown after the formula.
tuner::ranking rank_at_best_segments(const algorithms::call& c, const tuner::machine_params& p,
                                     algorithms::port_model ports,
                                     const tuner::in_network_state& inc,
                                     segments_by_algorithm* chosen_p) {
    tuner::ranking out = tuner::rank_algorithms(c, p, ports, inc);
    for (tuner::candidate& k : out.candidates) {
        if (!k.applicable) {
            continue;
        }
        auto time_at = [&](int segments) -> std::optional<double> {
            algorithms::call at = c;
            at.segments         = segments;
            if (!tuner::admits(*k.algo, at, inc)) {
                return std::nullopt;
            }
            return tuner::predict_s(*k.algo, at, out.bytes, p, ports);
        };
        segment_choice best = best_segments(auto_segments_cap(c), time_at);
        if (best.segments > 0) {
            k.time_s = best.time_s;
            k.reason += "; P = " + std::to_string(best.segments);
            (*chosen_p)[k.algo] = best.segments;
        }
    }
    // Applicable first, fastest first (ties keep catalogue order), as rank_algorithms.
    std::stable_sort(out.candidates.begin(), out.candidates.end(),
                     [](const tuner::candidate& x, const tuner::candidate& y) {
                         return x.applicable != y.applicable ? x.applicable
                                                             : x.applicable && x.time_s < y.time_s;
                     });
    out.best = !out.candidates.empty() && out.candidates.front().applicable
                   ? out.candidates.front().algo
                   : nullptr;
    return out;
}

status run_explain(const explain_flags& f) {
    LOOM_ASSIGN(cost_model link, parse_link_flags(f.link));
    LOOM_ASSIGN(tuner::machine_params p, parameters(f, link));
    tuner::in_network_state inc;
    inc.usable = f.in_network;
    if (!f.in_network) {
        inc.why_not = "no aggregation node (--switch not given)";
    }
    if (!f.call.algorithm.empty()) {
        return invalid_argument("explain ranks every algorithm: drop --algorithm");
    }
    call_flags flags         = f.call;
    const bool auto_segments = segments_auto(flags);
    if (auto_segments) {
        flags.segments.clear();
    }
    LOOM_ASSIGN(algorithms::call base, make_call(flags));
    segments_by_algorithm chosen_p, unused;
    auto rank = [&](const algorithms::call& c, segments_by_algorithm* out) {
        return auto_segments ? rank_at_best_segments(c, p, link.ports, inc, out)
                             : tuner::rank_algorithms(c, p, link.ports, inc);
    };
    if (f.bytes.empty()) {
        return invalid_argument("--bytes is required (e.g. 8,1M,64M)");
    }
    LOOM_ASSIGN(auto sizes, parse_size_list("--bytes", f.bytes));
    nlohmann::json all = nlohmann::json::array();
    for (int64_t bytes : sizes) {
        algorithms::call c = base;
        LOOM_ASSIGN(c.count, count_for_bytes(base, bytes));
        // As a communicator: decided at the bucket's middle, shown at the exact size.
        tuner::ranking bucket = rank(tuner::representative(c, double(bytes)), &unused);
        chosen_p.clear();
        tuner::ranking exact                = rank(c, &chosen_p);
        const algorithms::algorithm* chosen = bucket.best;
        if (chosen && !algorithms::check_call(*chosen, c)) {
            chosen = exact.best;
        }
        if (f.json) {
            all.push_back(explanation_json(c, exact, chosen, chosen_p));
        } else {
            std::cout << tuner::explain_text(c, exact, chosen, "tuner", p, link.ports) << '\n';
        }
    }
    if (f.json) {
        std::cout << (all.size() == 1 ? all.front() : all).dump(2) << '\n';
    }
    return status::ok();
}

}  // namespace

void add_explain_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto ef       = std::make_shared<explain_flags>();
    CLI::App* cmd = app.add_subcommand(
        "explain", "the tuner's choice for a call: candidates, predicted times, exclusions");
    add_call_flags(*cmd, ef->call, call_flag_set::predict_segments_auto);
    cmd->add_option("--bytes", ef->bytes, "payload sizes, a comma list (e.g. 8,1M,64M)")
        ->type_name("M");
    cmd->add_option("--alpha", ef->link.alpha, "per-message latency α (default 1us)")
        ->type_name("S");
    cmd->add_option("--bw", ef->link.bw, "link bandwidth (default 25GB/s)")->type_name("B");
    add_alpha_switch_option(*cmd, ef->link.alpha_switch);
    cmd->add_option("--reduce-bw", ef->reduce_bw,
                    "local reduction throughput, counted per byte each rank combines "
                    "(default: not counted; a calibration file gives it)")
        ->type_name("B");
    add_calibration_options(*cmd, ef->calibration);
    cmd->add_option("--port-model", ef->link.ports,
                    "per-edge or single-port; default LOOM_PORT_MODEL, else per-edge")
        ->type_name("MODEL");
    cmd->add_flag("--switch", ef->in_network,
                  "an aggregation node admits the job (the inc algorithms may run)");
    cmd->add_flag("--json", ef->json, "machine-readable output");
    verbs.push_back({cmd, [ef] { return run_explain(*ef); }});
}

}  // namespace loom::sim_tool
