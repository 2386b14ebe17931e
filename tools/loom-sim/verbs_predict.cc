// SPDX-License-Identifier: Apache-2.0
// loom-sim predict / overview: the algorithms' closed-form α-β costs for a call.
//
// predict: one algorithm at one size prints n_alpha, n_beta and the time (cost::time_s);
// --algorithm all (or a comma list) and/or a comma list of sizes print a table, one row per
// algorithm and one column per size, the fastest marked. --json prints ONE object for the
// single case and an array of the same objects otherwise.
//
// overview: the job the README shows. The catalogue in brief, then all-reduce on a 4x4x4
// torus (64 ranks) and on one 64-port switch (star:64) for 1K … 1G, under the documented
// defaults α = 1 µs and BW = 25 GB/s per link, per-edge ports (cost_model's defaults).
#include <iostream>
#include <memory>

#include "base/check.hh"
#include "loom_sim.hh"

namespace loom::sim_tool {
namespace {

struct model_flags {
    link_flags link;
    calibration_flags calibration;
    bool json = false;
};

struct predict_flags {
    call_flags call;
    std::string bytes;
    model_flags model;
};

struct overview_flags {
    std::string segments = "1";
    model_flags model;
};

void add_model_flags(CLI::App& cmd, model_flags& f) {
    cmd.add_option("--alpha", f.link.alpha,
                   "per-message latency α in seconds, or with us/ns/ms "
                   "(default 1us)")
        ->type_name("S");
    cmd.add_option("--bw", f.link.bw,
                   "link bandwidth in bytes/s, or e.g. 25GB/s, 200Gbit/s "
                   "(default 25GB/s)")
        ->type_name("B");
    add_alpha_switch_option(cmd, f.link.alpha_switch);
    cmd.add_option("--port-model", f.link.ports,
                   "per-edge (each pair its own link, the texts) or single-port (one port per "
                   "rank into a switch); default LOOM_PORT_MODEL, else per-edge")
        ->type_name("MODEL");
    add_calibration_options(cmd, f.calibration);
    cmd.add_flag("--json", f.json, "machine-readable output");
}

result<cost_model> make_model(const model_flags& f, const std::string& ranks = "") {
    LOOM_ASSIGN(cost_model m, parse_link_flags(f.link));
    LOOM_ASSIGN(auto measured, load_calibration(f.calibration, f.link.alpha_or_bw_given(), ranks));
    if (measured) {  // this machine, as the tuner sees it
        m.alpha_s        = measured->alpha_s;
        m.bw_bytes_per_s = measured->bw_bytes_per_s;
        if (f.link.alpha_switch.empty()) {
            m.alpha_switch_s = measured->switch_alpha();
        }
    }
    return m;
}

void print_single(const algorithms::call& c, const cost_model& model, const prediction& p,
                  bool auto_segments) {
    std::cout << schedule::collective_name(c.coll) << ' ' << p.algo->name << ": "
              << grid_title(c, model, auto_segments) << ", M = " << format_size(p.bytes) << " ("
              << p.bytes << " bytes)\n"
              << "  formula   " << p.algo->formula << '\n'
              << "  n_alpha   " << format_number(p.cost.n_alpha) << '\n'
              << "  n_beta    " << format_number(p.cost.n_beta) << '\n';
    if (p.cost.n_alpha_switch > 0) {
        std::cout << "  n_alpha_switch " << format_number(p.cost.n_alpha_switch) << '\n';
    }
    if (auto_segments) {
        std::cout << "  segments  " << p.segments
                  << " (auto: the least predicted time over P = 1..min(count, " << max_auto_segments
                  << "))\n";
    }
    std::cout << "  time      " << format_us(p.time_s) << " µs"
              << (p.cost.exact ? "" : " (asymptotic form)") << '\n';
    if (!p.cost.note.empty()) {
        std::cout << "  note      " << p.cost.note << '\n';
    }
}

status run_predict(const predict_flags& f) {
    LOOM_ASSIGN(cost_model model, make_model(f.model, f.call.ranks));
    // A fabric file: its shape, and the closed forms at its slowest link's α and BW.
    call_flags flags         = f.call;
    const bool auto_segments = segments_auto(flags);
    if (auto_segments) {
        flags.segments.clear();
    }
    LOOM_ASSIGN(auto file, take_fabric_file(flags, {}, f.model.link.alpha_or_bw_given()));
    if (file) {
        model.alpha_s        = file->fabric.alpha_s;
        model.bw_bytes_per_s = file->fabric.bw_bytes_per_s;
    }
    LOOM_ASSIGN(algorithms::call c, make_call(flags));
    if (f.bytes.empty()) {
        return invalid_argument("--bytes is required (e.g. 1M, or a list such as 1K,1M,1G)");
    }
    LOOM_ASSIGN(auto sizes, parse_size_list("--bytes", f.bytes));
    LOOM_ASSIGN(auto algos, algorithms_named(c.coll, f.call.algorithm));
    auto grid  = predict_grid(c, algos, sizes, model, auto_segments);
    bool table = f.call.algorithm == "all" || algos.size() > 1 || sizes.size() > 1;
    if (!table) {
        const prediction& p = grid.front();
        if (!p.applicable) {
            return p.applicable;
        }
        if (f.model.json) {
            std::cout << prediction_json(c, model, p).dump(2) << '\n';
        } else {
            if (file) {
                std::cout << fabric_file_note(*file) << '\n';
            }
            print_single(c, model, p, auto_segments);
        }
        return status::ok();
    }
    if (f.model.json) {
        auto list = nlohmann::json::array();
        for (const prediction& p : grid) {
            list.push_back(prediction_json(c, model, p));
        }
        std::cout << list.dump(2) << '\n';
        return status::ok();
    }
    if (file) {
        std::cout << fabric_file_note(*file) << '\n';
    }
    std::cout << grid_title(c, model, auto_segments)
              << "\ntime in µs; * the fastest at that size, ~ an asymptotic form\n";
    print_grid(std::cout, sizes, grid);
    if (auto_segments) {
        print_grid_segments(std::cout, sizes, grid);
    }
    return status::ok();
}

// The catalogue in brief: how many, and the names per primitive.
void print_catalogue_brief() {
    auto all = algorithms::catalogue();
    std::cout << "loom-sim overview: " << all.size()
              << " algorithms in the catalogue ('loom-sim algorithms' gives each one's cost "
                 "and constraints)\n";
    for (int i = 0; i < schedule::collective_count; ++i) {
        auto coll        = schedule::collective(i);
        std::string name = std::string(schedule::collective_name(coll));
        std::string list = algorithms::names_for(coll);
        name.resize(16, ' ');
        std::cout << "  " << name << (list.empty() ? "(none yet)" : list) << '\n';
    }
}

status run_overview(const overview_flags& f) {
    LOOM_ASSIGN(cost_model model, make_model(f.model));
    LOOM_ASSIGN(int64_t segments, parse_integer("--segments", f.segments, 1, INT32_MAX));
    // 1K … 1G: nccl-tests' usual sweep, from latency-bound to bandwidth-bound.
    const std::vector<int64_t> sizes = {int64_t{1} << 10, int64_t{1} << 16, int64_t{1} << 20,
                                        int64_t{1} << 24, int64_t{1} << 28, int64_t{1} << 30};
    std::vector<const algorithms::algorithm*> algos;
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        if (a->primitive == schedule::collective::allreduce) {
            algos.push_back(a);
        }
    }
    auto doc = nlohmann::json::array();
    if (!f.model.json) {
        print_catalogue_brief();
        std::cout << "\nPredicted all-reduce time, t = n_alpha·α + n_beta·M/BW; µs, * the "
                     "fastest at that size, ~ an asymptotic form\n";
    }
    for (const char* shape : {"torus:4x4x4", "star:64"}) {
        algorithms::call c;
        c.coll     = schedule::collective::allreduce;
        c.nranks   = 64;
        c.topo     = topology::shape::parse(shape).value();
        c.segments = static_cast<int>(segments);
        auto grid  = predict_grid(c, algos, sizes, model);
        if (f.model.json) {
            for (const prediction& p : grid) {
                doc.push_back(prediction_json(c, model, p));
            }
            continue;
        }
        std::cout << '\n' << grid_title(c, model) << '\n';
        print_grid(std::cout, sizes, grid);
    }
    if (f.model.json) {
        std::cout << doc.dump(2) << '\n';
    }
    return status::ok();
}

}  // namespace

result<std::vector<const algorithms::algorithm*>> algorithms_named(schedule::collective coll,
                                                                   const std::string& text) {
    std::vector<const algorithms::algorithm*> out;
    if (text == "all") {
        for (const algorithms::algorithm* a : algorithms::catalogue()) {
            if (a->primitive == coll) {
                out.push_back(a);
            }
        }
        if (out.empty()) {
            return not_supported("no algorithm implements " +
                                 std::string(schedule::collective_name(coll)) + " yet");
        }
        return out;
    }
    auto names = split_list(text);
    if (names.empty()) {
        names.push_back("");  // find_algorithm says it is required and lists the names
    }
    for (const std::string& name : names) {
        LOOM_ASSIGN(out.emplace_back(), find_algorithm(coll, name));
    }
    return out;
}

void add_predict_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto pf       = std::make_shared<predict_flags>();
    CLI::App* cmd = app.add_subcommand(
        "predict", "the α-β cost of algorithms for a call: n_alpha, n_beta, time");
    add_call_flags(*cmd, pf->call, call_flag_set::predict_segments_auto);
    cmd->add_option("--bytes", pf->bytes,
                    "payload M: bytes, K/M/G (1024-based) or KB/MB/GB, or a comma list")
        ->type_name("M");
    add_model_flags(*cmd, pf->model);
    cmd->footer(
        "With one algorithm and one size: n_alpha, n_beta, time (--json: one object). "
        "With --algorithm all, a comma list or several sizes: a table, time in µs "
        "(--json: an array of those objects).");
    verbs.push_back({cmd, [pf] { return run_predict(*pf); }});

    auto of = std::make_shared<overview_flags>();
    cmd     = app.add_subcommand("overview",
                                 "the catalogue, then predicted all-reduce times on torus:4x4x4 "
                                     "and star:64 for 1K..1G");
    cmd->add_option("--segments", of->segments, "pipeline segments P (default 1)")->type_name("P");
    add_model_flags(*cmd, of->model);
    verbs.push_back({cmd, [of] { return run_overview(*of); }});
}

}  // namespace loom::sim_tool
