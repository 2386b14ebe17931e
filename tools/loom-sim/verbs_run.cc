// SPDX-License-Identifier: Apache-2.0
// loom-sim run: simulate a schedule on a modeled fabric (fabric/sim,
// docs/architecture.md#executors, executor 3).
//
//   loom-sim run --collective C --algorithm A --ranks N [--topology T] [--count E | --bytes M]
//                [--alpha S] [--bw B] [--port-model MODEL] [--segments P] [--channels C]
//                [--ties RULE] [--root R] [--alu S] [--efficiency F] [--gamma S] [--json]
//   loom-sim run --schedule FILE [--topology T] [--ties RULE] [model flags]
//
// T is a shape or a fabric file (*.json, fabric/topology/fabric.hh): then each link has the
// file's α and BW, the shape is the file's (or inferred, sim::shape_of), --ranks defaults to
// its rank count, and the closed form is stated at the slowest link's α and BW.
//
// Prints the simulated time, n_alpha and n_beta as observed on the critical path beside the
// algorithm's closed form (algorithms::predict), the critical path (the step and link that
// finished last, the gates that led to it, its last steps), the busiest links and the
// ranks' idle time. --json prints one object (time_s, n_alpha, n_beta, …). Each rank's steps
// are generated on demand, so N = 4096 runs in seconds (fabric/sim/sim.hh).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "base/check.hh"
#include "loom_sim.hh"
#include "sim/sim.hh"

namespace loom::sim_tool {
namespace {

using nlohmann::json;

struct run_flags {
    call_flags call;
    std::string bytes;
    std::string file;
    link_flags link;
    std::string alu        = "0";
    std::string efficiency = "1";
    std::string gamma      = "0";
    std::string top        = "10";
    std::string chain      = "8";
    calibration_flags calibration;
    bool json = false;
};

// What one run needs besides the fabric: the call (generated) or the schedule (a file).
struct job {
    std::optional<algorithms::call> call;
    const algorithms::algorithm* algo = nullptr;
    std::optional<schedule::schedule> file;
    sim::fabric fabric;
    std::string fabric_path;  // --topology FILE.json: per-link α and BW from it
    size_t top = 10, chain = 8;
};

// A share in (0, 1], e.g. --efficiency 0.9375.
result<double> parse_share(std::string_view flag, const std::string& text) {
    double v       = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v <= 0 ||
        v > 1) {
        return invalid_argument(std::string(flag) + ": expected a number in (0, 1], got '" + text +
                                "'");
    }
    return v;
}

status parse_model(const run_flags& f, job& j) {
    LOOM_ASSIGN(cost_model link, parse_link_flags(f.link));
    LOOM_ASSIGN(j.fabric.alu_latency_s, parse_seconds("--alu", f.alu));
    LOOM_ASSIGN(j.fabric.gamma_s_per_byte, parse_seconds("--gamma", f.gamma));
    LOOM_ASSIGN(j.fabric.efficiency, parse_share("--efficiency", f.efficiency));
    LOOM_ASSIGN(int64_t top, parse_integer("--top", f.top, 0, 1 << 20));
    LOOM_ASSIGN(int64_t chain, parse_integer("--chain", f.chain, 0, 1 << 20));
    auto measured = load_calibration(f.calibration, f.link.alpha_or_bw_given(), f.call.ranks);
    if (!measured) {
        return measured.error();
    }
    j.fabric.alpha_s        = link.alpha_s;
    j.fabric.bw_bytes_per_s = link.bw_bytes_per_s;
    if (const auto& figures = *measured; figures.has_value()) {
        j.fabric.alpha_s        = figures->alpha_s;
        j.fabric.bw_bytes_per_s = figures->bw_bytes_per_s;
    }
    j.fabric.alpha_switch_s = link.alpha_switch_s;
    j.fabric.ports          = link.ports;
    j.top                   = static_cast<size_t>(top);
    j.chain                 = static_cast<size_t>(chain);
    return status::ok();
}

// The call flags that a schedule file states itself (all but --topology and --ties).
bool call_flags_besides_fabric(const call_flags& c) {
    call_flags rest = c;
    rest.topology.clear();
    rest.ties.clear();
    return any_call_flag(rest);
}

status load_schedule_job(const run_flags& f, job& j) {
    if (call_flags_besides_fabric(f.call) || !f.bytes.empty()) {
        return invalid_argument(
            "--schedule excludes the call flags (--collective, --algorithm, --ranks, --count, "
            "--bytes, …): the file states the call; --topology and --ties still apply");
    }
    LOOM_ASSIGN(schedule::schedule s, read_schedule_file(f.file));
    int n = s.info.nranks;
    // The fabric: --topology (a shape or a fabric file), else the schedule's own "topology"
    // when it parses, else a star.
    call_flags file_flags;
    file_flags.topology = f.call.topology;
    file_flags.ranks    = std::to_string(n);
    LOOM_ASSIGN(auto file, take_fabric_file(file_flags, j.fabric, f.link.alpha_or_bw_given()));
    std::string topo = !f.call.topology.empty() ? file_flags.topology : s.info.topology;
    j.fabric.topo    = topology::shape::star(std::max(n, 1));
    if (!topo.empty()) {
        auto shape = topology::shape::parse(topo);
        if (!shape) {
            return invalid_argument("--topology: " + shape.error().message());
        }
        if (shape->size() != n) {
            return invalid_argument("topology " + topo + " has " + std::to_string(shape->size()) +
                                    " ranks, the schedule " + std::to_string(n));
        }
        j.fabric.topo = *shape;
    }
    if (file) {
        j.fabric      = file->fabric;
        j.fabric_path = file->path;
    }
    LOOM_ASSIGN(j.fabric.ties, parse_ties(f.call.ties));
    j.file = std::move(s);
    return status::ok();
}

status load_call_job(const run_flags& f, job& j) {
    if (!f.bytes.empty() && !f.call.count.empty()) {
        return invalid_argument("give --count (elements) or --bytes (payload M), not both");
    }
    call_flags flags = f.call;
    if (!f.bytes.empty() && flags.dtype_size.empty()) {
        flags.dtype_size = "1";  // as predict: one-byte elements, so M is exactly --bytes
    }
    LOOM_ASSIGN(auto file, take_fabric_file(flags, j.fabric, f.link.alpha_or_bw_given()));
    if (file) {
        j.fabric      = file->fabric;
        j.fabric_path = file->path;
    }
    LOOM_ASSIGN(algorithms::call c, make_call(flags));
    if (!f.bytes.empty()) {
        LOOM_ASSIGN(int64_t bytes, parse_size("--bytes", f.bytes));
        LOOM_ASSIGN(c.count, count_for_bytes(c, bytes));
    }
    LOOM_ASSIGN(j.algo, find_algorithm(c.coll, flags.algorithm));
    LOOM_CHECK(algorithms::check_call(*j.algo, c));
    j.fabric.topo = c.topo;
    j.fabric.ties = c.ties;
    j.call        = c;
    return status::ok();
}

struct idle_summary {
    double mean = 0, max = 0;
    int max_rank = -1;
};

idle_summary summarise_idle(const std::vector<double>& idle) {
    idle_summary s;
    for (size_t r = 0; r < idle.size(); ++r) {
        s.mean += idle[r];
        if (s.max_rank < 0 || idle[r] > s.max) {
            s.max      = idle[r];
            s.max_rank = static_cast<int>(r);
        }
    }
    s.mean = idle.empty() ? 0 : s.mean / static_cast<double>(idle.size());
    return s;
}

std::string describe(const sim::chain_step& c) {
    std::string out = "rank " + std::to_string(c.rank) + " step " + std::to_string(c.step) + " " +
                      std::string(schedule::step_kind_name(c.kind));
    if (c.kind == schedule::step_kind::send) {
        out += " to " + std::to_string(c.peer);
    } else if (schedule::is_receive(c.kind)) {
        out += " from " + std::to_string(c.peer);
    }
    return out + ", " + format_size(c.bytes);
}

// What the step waited for last, in words.
std::string gate_text(const sim::chain_step& c) {
    switch (c.why) {
        case sim::gate::none:
            return "ready at the start";
        case sim::gate::own:
            return "its dependencies";
        case sim::gate::partner:
            return "the peer's matching step";
        case sim::gate::link:
            return "link " + c.link;
        case sim::gate::slot:
            return "the aggregation result";
    }
    return "?";
}

std::string percent(double share) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", 100 * share);
    return buf;
}

// Counts of each gate along the critical path.
std::vector<std::pair<std::string, int64_t>> gate_counts(const sim::report& r) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (auto g :
         {sim::gate::none, sim::gate::own, sim::gate::partner, sim::gate::link, sim::gate::slot}) {
        int64_t k = std::count_if(r.chain.begin(), r.chain.end(),
                                  [g](const sim::chain_step& c) { return c.why == g; });
        out.push_back({std::string(sim::gate_name(g)), k});
    }
    return out;
}

std::string title(const job& j, const sim::report& r) {
    const auto& f = j.fabric;
    std::string coll =
        std::string(schedule::collective_name(j.call ? j.call->coll : j.file->info.coll));
    std::string what  = j.algo ? coll + " " + std::string(j.algo->name) : coll + " (schedule file)";
    int n             = f.topo.size();
    std::string links = "α = " + format_us(f.alpha_s) +
                        " µs, BW = " + format_number(f.bw_bytes_per_s / 1e9) + " GB/s";
    if (!j.fabric_path.empty()) {
        links = "per-link α and BW from " + j.fabric_path + " (slowest: " + links + ")";
    }
    return what + " on " + f.topo.to_string() + " (" + std::to_string(n) +
           (n == 1 ? " rank), " : " ranks), ") + std::string(algorithms::port_model_name(f.ports)) +
           ", " + links + (f.efficiency < 1 ? " × " + format_number(f.efficiency) : "") +
           alpha_switch_text(f.alpha_switch_s) +
           (f.alu_latency_s > 0 ? ", ALU " + format_us(f.alu_latency_s) + " µs" : "") +
           ", M = " + format_size(static_cast<int64_t>(r.payload_bytes));
}

double predicted_time_s(const algorithms::cost& c, const sim::fabric& f, double bytes) {
    return c.time_s(f.alpha_s, f.bw_bytes_per_s, bytes, f.alpha_switch_s);
}

std::optional<algorithms::cost> closed_form(const job& j, const sim::report& r) {
    if (!j.algo) {
        return std::nullopt;
    }
    return algorithms::predict(*j.algo, *j.call, r.payload_bytes, j.fabric.ports);
}

void print_text(const job& j, const sim::report& r) {
    auto cost = closed_form(j, r);
    std::cout << "run: " << title(j, r) << '\n'
              << "  time        " << format_us(r.time_s) << " µs\n"
              << "  n_alpha     " << format_number(r.n_alpha)
              << (cost ? "  (closed form " + format_number(cost->n_alpha) + ")" : "") << '\n'
              << "  n_beta      " << format_number(r.n_beta)
              << (cost ? "  (closed form " + format_number(cost->n_beta) + ")" : "") << '\n';
    if (j.fabric.alpha_switch_s >= 0 || (cost && cost->n_alpha_switch > 0)) {
        // Unset α_switch: the aggregation hops are in n_alpha, the closed form's apart.
        std::cout << "  n_alpha_sw  " << format_number(r.n_alpha_switch)
                  << (cost ? "  (closed form " + format_number(cost->n_alpha_switch) + ")" : "")
                  << '\n';
    }
    if (cost) {
        double t = predicted_time_s(*cost, j.fabric, r.payload_bytes);
        std::cout << "  predicted   " << format_us(t) << " µs"
                  << (cost->exact ? "" : " (asymptotic form)")
                  << (j.fabric_path.empty() ? "" : " (every link as the slowest)") << '\n';
    }
    if (r.other_s > 0) {
        std::cout << "  other       " << format_us(r.other_s) << " µs (γ, ALU)\n";
    }
    std::cout << "  steps " << r.steps << ", transfers " << r.transfers << ", events " << r.events
              << ", links used " << r.links_used << '\n';
    if (r.last_rank >= 0) {
        std::cout << "critical path: " << r.chain.size() << " steps; last "
                  << describe(r.chain.back())
                  << (r.last_link.empty() ? "" : " on link " + r.last_link) << '\n'
                  << "  gates:";
        for (const auto& [name, k] : gate_counts(r)) {
            std::cout << ' ' << name << ' ' << k;
        }
        std::cout << '\n';
        size_t from = r.chain.size() > j.chain ? r.chain.size() - j.chain : 0;
        if (from > 0) {
            std::cout << "  … " << from << " earlier steps\n";
        }
        for (size_t k = from; k < r.chain.size(); ++k) {
            std::cout << "  " << describe(r.chain[k]) << " (waited for " << gate_text(r.chain[k])
                      << ")\n";
        }
    }
    if (!r.top_links.empty()) {
        std::cout << "links (busiest " << r.top_links.size() << " of " << r.links_used
                  << " by bytes): name, bytes, messages, busy µs, utilisation\n";
        for (const auto& l : r.top_links) {
            std::cout << "  " << l.name << "  " << l.bytes << "  " << l.messages << "  "
                      << format_us(l.busy_s) << "  " << percent(l.utilisation) << '\n';
        }
    }
    auto idle = summarise_idle(r.idle_s);
    std::cout << "idle: mean " << format_us(idle.mean) << " µs, max " << format_us(idle.max)
              << " µs (rank " << idle.max_rank << ")\n";
}

json chain_json(const sim::chain_step& c) {
    json o = {{"rank", c.rank},
              {"step", c.step},
              {"kind", std::string(schedule::step_kind_name(c.kind))},
              {"bytes", c.bytes},
              {"waited_for", std::string(sim::gate_name(c.why))}};
    if (c.peer >= 0) {
        o["peer"] = c.peer;
    }
    if (!c.link.empty()) {
        o["link"] = c.link;
    }
    return o;
}

json report_json(const job& j, const sim::report& r) {
    const auto& f = j.fabric;
    json o        = {{"time_s", r.time_s},
                     {"n_alpha", r.n_alpha},
                     {"n_beta", r.n_beta},
                     {"n_alpha_switch", r.n_alpha_switch},
                     {"other_s", r.other_s},
                     {"payload_bytes", r.payload_bytes},
                     {"topology", f.topo.to_string()},
                     {"ranks", f.topo.size()},
                     {"port_model", std::string(algorithms::port_model_name(f.ports))},
                     {"ties", std::string(routing::tie_rule_name(f.ties))},
                     {"alpha_s", f.alpha_s},
                     {"alpha_switch_s", f.alpha_switch_s},
                     {"bw_bytes_per_s", f.bw_bytes_per_s},
                     {"efficiency", f.efficiency},
                     {"alu_latency_s", f.alu_latency_s},
                     {"gamma_s_per_byte", f.gamma_s_per_byte},
                     {"steps", r.steps},
                     {"transfers", r.transfers},
                     {"events", r.events},
                     {"links_used", r.links_used},
                     {"link_bytes", r.link_bytes}};
    if (!j.fabric_path.empty()) {
        o["fabric_file"] = j.fabric_path;  // alpha_s, bw_bytes_per_s: its slowest link's
    }
    o["collective"] =
        std::string(schedule::collective_name(j.call ? j.call->coll : j.file->info.coll));
    o["algorithm"] = j.algo ? std::string(j.algo->name) : j.file->info.algorithm;
    if (auto cost = closed_form(j, r)) {
        o["predicted"] = {{"n_alpha", cost->n_alpha},
                          {"n_beta", cost->n_beta},
                          {"n_alpha_switch", cost->n_alpha_switch},
                          {"time_s", predicted_time_s(*cost, f, r.payload_bytes)},
                          {"exact", cost->exact}};
    }
    json path = {{"length", r.chain.size()}};
    if (r.last_rank >= 0) {
        path["last"]         = chain_json(r.chain.back());
        path["last"]["link"] = r.last_link;
        json gates           = json::object();
        for (const auto& [name, k] : gate_counts(r)) {
            gates[name] = k;
        }
        path["gates"] = gates;
        json tail     = json::array();
        size_t from   = r.chain.size() > j.chain ? r.chain.size() - j.chain : 0;
        for (size_t k = from; k < r.chain.size(); ++k) {
            tail.push_back(chain_json(r.chain[k]));
        }
        path["tail"] = tail;
    }
    o["critical_path"] = path;
    json links         = json::array();
    for (const auto& l : r.top_links) {
        links.push_back({{"name", l.name},
                         {"bytes", l.bytes},
                         {"messages", l.messages},
                         {"busy_s", l.busy_s},
                         {"utilisation", l.utilisation}});
    }
    o["links"]  = links;
    auto idle   = summarise_idle(r.idle_s);
    o["idle_s"] = {{"mean", idle.mean}, {"max", idle.max}, {"max_rank", idle.max_rank}};
    return o;
}

status run_sim(const run_flags& f) {
    job j;
    LOOM_CHECK(parse_model(f, j));
    status loaded = f.file.empty() ? load_call_job(f, j) : load_schedule_job(f, j);
    if (!loaded) {
        return loaded;
    }
    sim::options o;
    o.top_links = j.top;
    auto r =
        j.algo ? sim::simulate(*j.algo, *j.call, j.fabric, o) : sim::simulate(*j.file, j.fabric, o);
    if (!r) {
        // A schedule that cannot run (deadlock, unmatched transfer) is bad input to run:
        // exit 2 like any other (exit 1 is verify's "the schedule is wrong").
        if (r.error().code() == LOOM_ERR_VERIFY) {
            return invalid_argument("the schedule does not run: " + r.error().message());
        }
        return r.error();
    }
    if (f.json) {
        std::cout << report_json(j, *r).dump(2) << '\n';
    } else {
        print_text(j, *r);
    }
    return status::ok();
}

}  // namespace

void add_run_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto rf       = std::make_shared<run_flags>();
    CLI::App* cmd = app.add_subcommand(
        "run", "simulate a schedule on a modeled fabric: time, critical path, links, idle");
    add_call_flags(*cmd, rf->call, call_flag_set::full);
    cmd->add_option("--bytes", rf->bytes,
                    "payload M instead of --count: bytes, K/M/G (1024-based) or KB/MB/GB "
                    "(one-byte elements unless --dtype-size)")
        ->type_name("M");
    cmd->add_option("--schedule", rf->file,
                    "simulate this schedule file (text or JSON; '-' reads stdin) instead of "
                    "generating one; --topology and --ties still apply")
        ->type_name("FILE");
    cmd->add_option("--alpha", rf->link.alpha,
                    "latency per hop α (default 1us; a fabric file gives each link's)")
        ->type_name("S");
    cmd->add_option("--bw", rf->link.bw,
                    "bandwidth per link direction (default 25GB/s; a fabric file gives each "
                    "link's)")
        ->type_name("B");
    add_alpha_switch_option(*cmd, rf->link.alpha_switch);
    add_calibration_options(*cmd, rf->calibration);
    cmd->add_option("--port-model", rf->link.ports,
                    "star/full mesh: per-edge (a link per pair) or single-port (one port per "
                    "rank into a switch); default LOOM_PORT_MODEL, else per-edge")
        ->type_name("MODEL");
    cmd->add_option("--alu", rf->alu,
                    "aggregation node: last push to result ready, for inc_push/inc_pull "
                    "(default 0)")
        ->type_name("S");
    cmd->add_option("--efficiency", rf->efficiency,
                    "share of BW each hop delivers, in (0, 1] (default 1)")
        ->type_name("F");
    cmd->add_option("--gamma", rf->gamma, "seconds per byte of local_reduce/local_copy (default 0)")
        ->type_name("S");
    cmd->add_option("--top", rf->top, "links to list, busiest first (default 10)")->type_name("K");
    cmd->add_option("--chain", rf->chain, "critical-path steps to list, last first (default 8)")
        ->type_name("K");
    cmd->add_flag("--json", rf->json, "one JSON object (time_s, n_alpha, n_beta, …)");
    cmd->footer(
        "n_alpha and n_beta are observed on the critical path (α units; bytes·BW/M with M the "
        "payload), beside the algorithm's closed form.");
    verbs.push_back({cmd, [rf] { return run_sim(*rf); }});
}

}  // namespace loom::sim_tool
