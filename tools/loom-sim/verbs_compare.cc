// SPDX-License-Identifier: Apache-2.0
// loom-sim compare: the closed forms against the simulator, every eligible algorithm.
//
//   loom-sim compare --collective C --topology T --bytes 1K,1M,1G [--algorithm all|A,B]
//                    [--ranks N] [--segments P] [--alpha S --bw B] [--port-model MODEL]
//                    [--json] [--plot FILE.png]
//
// For every algorithm of C that applies to the call at a size (predict_grid: the catalogue
// and algorithms::check_call, as predict), the predicted time (algorithms::predict, the
// closed form) and the simulated one (fabric/sim) side by side, the fastest simulated time
// of each size marked, then one line per size naming the winner. T is a shape or a fabric
// file (take_fabric_file: per-link α/BW, the closed forms at the slowest link); --ranks
// defaults to T's size. One simulation per applicable (algorithm, size): lean enough for N
// up to a few hundred. --json prints one object. --plot writes a PNG of simulated time
// against size (log-log, a line per algorithm) through gnuplot, which must be on PATH
// (Debian: gnuplot-nox); without it the table is still printed and the verb fails after.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "base/check.hh"
#include "loom_sim.hh"
#include "loom_sim_params.hh"
#include "tools/common/gnuplot.hh"

namespace loom::sim_tool {
namespace {

using nlohmann::json;

struct compare_flags {
    call_flags call;
    std::string bytes;
    link_flags link;
    std::string plot;
    bool json = false;
};

// One algorithm at one size: the prediction and, where it applies, the simulation.
struct entry {
    prediction pred;
    sim::report sim;
    bool winner = false;  // the least simulated time at this size (ties all marked)
};

struct comparison {
    algorithms::call base;
    cost_model model;
    sim::fabric fabric;
    std::optional<fabric_file> file;
    std::vector<int64_t> sizes;
    std::vector<entry> entries;  // algorithm-major, as predict_grid
};

// The simulator's call for a size: one-byte elements (as predict_grid), so that the
// payload is exactly the size; refused when the size is not a whole number of elements.
result<algorithms::call> call_for_size(const algorithms::call& base, int64_t bytes) {
    algorithms::call c = base;
    c.dtype_size       = 1;
    c.channels         = 1;
    LOOM_ASSIGN(c.count, count_for_bytes(c, bytes));
    return c;
}

result<comparison> build(const compare_flags& f) {
    comparison out;
    LOOM_ASSIGN(cost_model link, parse_link_flags(f.link));
    out.fabric.alpha_s        = link.alpha_s;
    out.fabric.alpha_switch_s = link.alpha_switch_s;
    out.fabric.bw_bytes_per_s = link.bw_bytes_per_s;
    out.fabric.ports          = link.ports;
    call_flags flags          = f.call;
    LOOM_ASSIGN(out.file, take_fabric_file(flags, out.fabric, f.link.alpha_or_bw_given()));
    if (out.file) {
        out.fabric = out.file->fabric;
    }
    auto c = make_call(flags);
    if (!c) {
        if (flags.ranks.empty() && flags.topology.empty()) {
            return invalid_argument("--topology is required (or --ranks N for star:N)");
        }
        return c.error();
    }
    out.base = *c;
    if (f.bytes.empty()) {
        return invalid_argument("--bytes is required (a size or a list such as 1K,1M,1G)");
    }
    LOOM_ASSIGN(out.sizes, parse_size_list("--bytes", f.bytes));
    LOOM_ASSIGN(auto algos,
                algorithms_named(c->coll, flags.algorithm.empty() ? "all" : flags.algorithm));
    out.model = {out.fabric.alpha_s, out.fabric.bw_bytes_per_s, out.fabric.ports,
                 out.fabric.alpha_switch_s};
    std::vector<algorithms::call> calls;
    for (int64_t bytes : out.sizes) {
        LOOM_ASSIGN(calls.emplace_back(), call_for_size(out.base, bytes));
    }
    for (prediction& p : predict_grid(out.base, algos, out.sizes, out.model)) {
        out.entries.push_back({.pred = std::move(p), .sim = {}});
    }
    const size_t nsizes = out.sizes.size();
    for (size_t i = 0; i < out.entries.size(); ++i) {
        entry& e = out.entries[i];
        if (!e.pred.applicable) {
            continue;
        }
        auto r = sim::simulate(*e.pred.algo, calls[i % nsizes], out.fabric);
        if (!r) {
            status st = r.error();
            return st.prefix("simulating " + std::string(e.pred.algo->name) + " at " +
                             format_size(e.pred.bytes) + ": ");
        }
        e.sim = std::move(r).value();
    }
    // Winners by simulated time.
    mark_least_time(
        out.entries, nsizes, [](const entry& e) { return e.pred.applicable.is_ok(); },
        [](const entry& e) { return e.sim.time_s; },
        [](entry& e, bool least) { e.winner = least; });
    return out;
}

// The entries of size index s that apply, in catalogue order.
std::vector<const entry*> at_size(const comparison& c, size_t s) {
    std::vector<const entry*> out;
    for (size_t i = s; i < c.entries.size(); i += c.sizes.size()) {
        if (c.entries[i].pred.applicable) {
            out.push_back(&c.entries[i]);
        }
    }
    return out;
}

// The winners of size index s by simulated time, and the closed forms' fastest.
std::vector<const entry*> winners(const comparison& c, size_t s) {
    auto out = at_size(c, s);
    std::erase_if(out, [](const entry* e) { return !e->winner; });
    return out;
}

std::string names(const std::vector<const entry*>& list, bool by_prediction) {
    std::string out;
    for (const entry* e : list) {
        if (!by_prediction || e->pred.fastest) {
            out += (out.empty() ? "" : " = ") + std::string(e->pred.algo->name);
        }
    }
    return out;
}

std::string ratio_text(const entry& e) {
    if (e.pred.time_s <= 0) {
        return e.sim.time_s <= 0 ? "1.000" : "-";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", e.sim.time_s / e.pred.time_s);
    return buf;
}

std::string pad(std::string s, size_t width, bool right) {
    if (s.size() >= width) {
        return s;
    }
    std::string fill(width - s.size(), ' ');
    return right ? fill + s : s + fill;
}

void print_text(const comparison& c) {
    if (c.file) {
        std::cout << fabric_file_note(*c.file) << '\n';
    }
    std::cout << "compare: " << grid_title(c.base, c.model) << '\n'
              << "time in µs: predicted (closed form, ~ asymptotic) and simulated (fabric/sim); "
                 "* the fastest simulated at that size\n";
    size_t name_width = 9, size_width = 4;
    for (const entry& e : c.entries) {
        name_width = std::max(name_width, e.pred.algo->name.size());
        size_width = std::max(size_width, format_size(e.pred.bytes).size());
    }
    std::vector<std::string> head = {"size", "algorithm", "predicted", "simulated", "sim/pred"};
    auto row                      = [&](const std::vector<std::string>& cells) {
        std::string line = "  " + pad(cells[0], size_width, false) + "  " +
                           pad(cells[1], name_width, false) + pad(cells[2], 12, true) +
                           pad(cells[3], 12, true) + pad(cells[4], 10, true);
        line.erase(line.find_last_not_of(' ') + 1);
        std::cout << line << '\n';
    };
    row(head);
    std::vector<const algorithms::algorithm*> never;  // applies at no size
    for (auto row = c.entries.begin(); row != c.entries.end(); row += c.sizes.size()) {
        if (std::none_of(row, row + c.sizes.size(),
                         [](const entry& e) { return e.pred.applicable.is_ok(); })) {
            never.push_back(row->pred.algo);
        }
    }
    for (size_t s = 0; s < c.sizes.size(); ++s) {
        for (size_t i = s; i < c.entries.size(); i += c.sizes.size()) {
            const entry& e = c.entries[i];
            if (std::find(never.begin(), never.end(), e.pred.algo) != never.end()) {
                continue;
            }
            if (!e.pred.applicable) {
                row({format_size(c.sizes[s]), std::string(e.pred.algo->name), "n/a ", "n/a ", ""});
                continue;
            }
            row({format_size(c.sizes[s]), std::string(e.pred.algo->name),
                 (e.pred.cost.exact ? "" : "~") + format_us(e.pred.time_s) + " ",
                 format_us(e.sim.time_s) + (e.winner ? "*" : " "), ratio_text(e)});
        }
    }
    for (const algorithms::algorithm* a : never) {
        auto first = std::find_if(c.entries.begin(), c.entries.end(),
                                  [a](const entry& e) { return e.pred.algo == a; });
        std::cout << not_applicable_line(first->pred);
    }
    for (size_t s = 0; s < c.sizes.size(); ++s) {
        auto best = winners(c, s);
        std::cout << "winner at " << format_size(c.sizes[s]) << ": ";
        if (best.empty()) {
            std::cout << "none (no algorithm applies)\n";
            continue;
        }
        std::string predicted = names(at_size(c, s), true);
        std::cout << names(best, false) << ", " << format_us(best.front()->sim.time_s)
                  << " µs simulated (closed forms' fastest: " << predicted << ")\n";
    }
}

json to_json(const comparison& c, const std::string& plot) {
    json results = json::array();
    for (const entry& e : c.entries) {
        json o = {{"algorithm", e.pred.algo->name},
                  {"bytes", e.pred.bytes},
                  {"applicable", e.pred.applicable.is_ok()}};
        if (!e.pred.applicable) {
            o["reason"] = e.pred.applicable.message();
            results.push_back(o);
            continue;
        }
        o["predicted"] = {
            {"time_s", e.pred.time_s},      {"n_alpha", e.pred.cost.n_alpha},
            {"n_beta", e.pred.cost.n_beta}, {"n_alpha_switch", e.pred.cost.n_alpha_switch},
            {"exact", e.pred.cost.exact},   {"fastest", e.pred.fastest}};
        o["simulated"] = {{"time_s", e.sim.time_s}, {"n_alpha", e.sim.n_alpha},
                          {"n_beta", e.sim.n_beta}, {"n_alpha_switch", e.sim.n_alpha_switch},
                          {"steps", e.sim.steps},   {"transfers", e.sim.transfers}};
        o["ratio"]     = e.pred.time_s > 0 ? json(e.sim.time_s / e.pred.time_s) : json(nullptr);
        o["winner"]    = e.winner;
        results.push_back(o);
    }
    json wins = json::array();
    for (size_t s = 0; s < c.sizes.size(); ++s) {
        auto best = winners(c, s);
        json w    = {{"bytes", c.sizes[s]}};
        if (best.empty()) {
            w["algorithm"] = nullptr;
        } else {
            w["algorithm"]   = best.front()->pred.algo->name;
            w["tied"]        = json::array();
            w["simulated_s"] = best.front()->sim.time_s;
            for (size_t k = 1; k < best.size(); ++k) {
                w["tied"].push_back(best[k]->pred.algo->name);
            }
            json fastest = json::array();
            for (const entry* e : at_size(c, s)) {
                if (e->pred.fastest) {
                    fastest.push_back(e->pred.algo->name);
                }
            }
            w["predicted_fastest"] = fastest;
        }
        wins.push_back(w);
    }
    json doc = {{"collective", schedule::collective_name(c.base.coll)},
                {"topology", c.base.topo.to_string()},
                {"ranks", c.base.nranks},
                {"segments", c.base.segments},
                {"port_model", algorithms::port_model_name(c.model.ports)},
                {"alpha_s", c.model.alpha_s},
                {"alpha_switch_s", c.model.alpha_switch_s},
                {"bw_bytes_per_s", c.model.bw_bytes_per_s},
                {"sizes", c.sizes},
                {"results", results},
                {"winners", wins}};
    if (c.file) {
        doc["fabric_file"] = c.file->path;  // alpha_s, bw_bytes_per_s: its slowest link's
    }
    if (!plot.empty()) {
        doc["plot"] = plot;
    }
    return doc;
}

// ---- --plot: a gnuplot script, run by gnuplot ----------------------------------------------

// The first executable "gnuplot" on PATH; empty if none.
std::string find_gnuplot() {
    std::string dirs = params::path.get();
    size_t at        = 0;
    while (at <= dirs.size()) {
        size_t end      = dirs.find(':', at);
        std::string dir = dirs.substr(at, end == std::string::npos ? std::string::npos : end - at);
        std::string candidate = (dir.empty() ? std::string(".") : dir) + "/gnuplot";
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        if (end == std::string::npos) {
            break;
        }
        at = end + 1;
    }
    return "";
}

// Simulated time against size, a line per algorithm (tools/common/gnuplot.hh's style).
tools::plot_spec plot_of(const comparison& c) {
    tools::plot_spec plot;
    plot.title          = "loom-sim compare: simulated " + grid_title(c.base, c.model);
    plot.xlabel         = "size (bytes)";
    plot.ylabel         = "simulated time (us)";
    const size_t nsizes = c.sizes.size();
    for (size_t i = 0; i < c.entries.size(); i += nsizes) {
        tools::plot_series line;
        line.title = c.entries[i].pred.algo->name;
        for (size_t s = 0; s < nsizes; ++s) {
            const entry& e = c.entries[i + s];
            if (e.pred.applicable && e.pred.bytes > 0 && e.sim.time_s > 0) {
                line.points.emplace_back(static_cast<double>(e.pred.bytes), e.sim.time_s * 1e6);
            }
        }
        plot.series.push_back(std::move(line));
    }
    return plot;
}

status write_plot(const comparison& c, const std::string& png) {
    std::string gnuplot = find_gnuplot();
    if (gnuplot.empty()) {
        return invalid_argument(
            "--plot: gnuplot not found on PATH; install it (Debian/Ubuntu: "
            "sudo apt-get install gnuplot-nox) or leave out --plot");
    }
    std::string script = tools::gnuplot_script(plot_of(c), png);
    if (script.empty()) {
        return invalid_argument("--plot: nothing to plot (no algorithm applies at a size > 0)");
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path dir = fs::temp_directory_path(ec);
    if (ec) {
        dir = ".";
    }
    std::string gp = (dir / ("loom-sim-plot-" + std::to_string(::getpid()) + ".gp")).string();
    {
        std::ofstream out(gp, std::ios::binary);
        out << script;
        if (!out) {
            return system_error("--plot: cannot write the gnuplot script '" + gp + "'");
        }
    }
    std::error_code ignore;
    fs::remove(png, ignore);
    tools::gnuplot_outcome drawn = tools::run_gnuplot(gp, png);
    fs::remove(gp, ignore);
    if (drawn.result != tools::gnuplot_outcome::kind::drawn) {
        return system_error("--plot: " + drawn.message);
    }
    return status::ok();
}

status run_compare(const compare_flags& f) {
    LOOM_ASSIGN(comparison c, build(f));
    if (f.json) {
        std::cout << to_json(c, f.plot).dump(2) << '\n';
    } else {
        print_text(c);
    }
    if (f.plot.empty()) {
        return status::ok();
    }
    std::cout.flush();  // the table stands even when the plot fails
    LOOM_CHECK(write_plot(c, f.plot));
    if (!f.json) {
        std::cout << "plot: " << f.plot << '\n';
    }
    return status::ok();
}

}  // namespace

void add_compare_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto cf       = std::make_shared<compare_flags>();
    CLI::App* cmd = app.add_subcommand(
        "compare", "predicted (closed form) against simulated time, every eligible algorithm");
    add_call_flags(*cmd, cf->call, call_flag_set::predict);
    cmd->add_option("--bytes", cf->bytes,
                    "payload sizes M: a comma list of bytes, K/M/G (1024-based) or KB/MB/GB")
        ->type_name("M");
    cmd->add_option("--alpha", cf->link.alpha, "latency per hop α (default 1us)")->type_name("S");
    add_alpha_switch_option(*cmd, cf->link.alpha_switch);
    cmd->add_option("--bw", cf->link.bw, "bandwidth per link direction (default 25GB/s)")
        ->type_name("B");
    cmd->add_option("--port-model", cf->link.ports,
                    "per-edge or single-port (star, full mesh); default LOOM_PORT_MODEL, else "
                    "per-edge")
        ->type_name("MODEL");
    cmd->add_option("--plot", cf->plot,
                    "also write a PNG of simulated time against size (log-log) with gnuplot "
                    "(Debian: gnuplot-nox)")
        ->type_name("FILE.png");
    cmd->add_flag("--json", cf->json, "one JSON object");
    cmd->footer(
        "--algorithm defaults to all; --ranks to the topology's size. A fabric file as "
        "--topology gives each link its own α and BW (the closed forms use the slowest link's).");
    verbs.push_back({cmd, [cf] { return run_compare(*cf); }});
}

}  // namespace loom::sim_tool
