// SPDX-License-Identifier: Apache-2.0
// loom-sim call flags: --collective, --algorithm, --ranks, --topology … → algorithms::call.
//
// The checks here are the ones a command line needs before the library is asked anything
// (a name that exists, a number that parses, a topology whose size is --ranks), each with a
// message that lists what is allowed. The algorithm's own constraints stay with the
// algorithm (algorithms::check_call, `applicable`), so the tool never restates them.
#include "base/check.hh"
#include "loom_sim.hh"

namespace loom::sim_tool {
namespace {

using schedule::collective;

// "all-reduce" and "reduce-scatter" read naturally on a command line; the library's names
// use underscores.
std::string normalise_name(std::string_view text) {
    std::string s(text);
    for (char& ch : s) {
        ch = ch == '-' ? '_' : ch;
    }
    return s;
}

result<topology::shape> parse_topology_flag(const std::string& text) {
    auto shape = topology::shape::parse(text);
    if (!shape) {
        return invalid_argument("--topology: " + shape.error().message() +
                                " (forms: star:N, ring:N, torus:4x4x2, mesh:3x5, fullmesh:N)");
    }
    return shape;
}

result<topology::shape> topology_for(const call_flags& f, int nranks) {
    if (f.topology.empty()) {
        return topology::shape::star(nranks);
    }
    LOOM_ASSIGN(auto shape, parse_topology_flag(f.topology));
    if (shape.size() != nranks) {
        return invalid_argument("--ranks " + std::to_string(nranks) +
                                " does not match --topology " + f.topology + ", which has " +
                                std::to_string(shape.size()) + " ranks");
    }
    return shape;
}

// An int flag with a default when it was not given.
result<int64_t> int_flag(const char* flag, const std::string& text, int64_t fallback, int64_t lo,
                         int64_t hi) {
    if (text.empty()) {
        return fallback;
    }
    return parse_integer(flag, text, lo, hi);
}

// Fills the numeric fields that depend on N; returns the first bad one.
status fill_numbers(const call_flags& f, algorithms::call& c) {
    const int64_t n = c.nranks;
    LOOM_ASSIGN(c.count, f.count.empty() ? result<int64_t>(n) : parse_size("--count", f.count));
    LOOM_ASSIGN(c.root, int_flag("--root", f.root, 0, 0, n - 1));
    LOOM_ASSIGN(c.peer, int_flag("--peer", f.peer, (c.root + 1) % n, 0, n - 1));
    if (segments_auto(f)) {
        return invalid_argument(
            "--segments auto: only predict and explain choose P; give a number");
    }
    LOOM_ASSIGN(c.segments, int_flag("--segments", f.segments, 1, 1, INT32_MAX));
    LOOM_ASSIGN(c.channels, int_flag("--channels", f.channels, 1, 1, INT32_MAX));
    LOOM_ASSIGN(c.dtype_size, int_flag("--dtype-size", f.dtype_size, 4, 1, 4096));
    // The payload M in bytes (count × element size, × N for alltoall) is printed and timed
    // as an integer: past max_payload_bytes it would overflow (a negative M), so refused.
    double payload = static_cast<double>(c.count) * static_cast<double>(c.dtype_size) *
                     (c.coll == schedule::collective::alltoall ? static_cast<double>(n) : 1.0);
    if (payload > static_cast<double>(max_payload_bytes)) {
        return invalid_argument(
            "--count " + f.count + " × --dtype-size " + std::to_string(c.dtype_size) +
            (c.coll == schedule::collective::alltoall ? " × N" : "") + " is a payload above " +
            std::to_string(max_payload_bytes) + " bytes (1 PiB), the most loom-sim takes");
    }
    return status::ok();
}

}  // namespace

result<collective> parse_collective_flag(std::string_view text) {
    if (text.empty()) {
        return invalid_argument("--collective is required (allowed: " + collective_names() + ")");
    }
    collective c;
    if (!schedule::parse_collective(normalise_name(text), &c)) {
        return invalid_argument("unknown collective '" + std::string(text) +
                                "' (allowed: " + collective_names() + ")");
    }
    return c;
}

result<algorithms::tie_rule> parse_ties(std::string_view text) {
    if (text.empty() || text == "toward-plus") {
        return algorithms::tie_rule::toward_plus;
    }
    if (text == "source-parity") {
        return algorithms::tie_rule::source_parity;
    }
    return invalid_argument("--ties: unknown tie rule '" + std::string(text) +
                            "' (allowed: toward-plus, source-parity)");
}

std::string collective_names() {
    std::string out;
    for (int i = 0; i < schedule::collective_count; ++i) {
        out += (i ? ", " : "") + std::string(schedule::collective_name(collective(i)));
    }
    return out;
}

void add_call_flags(CLI::App& cmd, call_flags& f, call_flag_set set) {
    bool full   = set == call_flag_set::full;
    bool auto_p = set == call_flag_set::predict_segments_auto;
    cmd.add_option("--collective", f.collective, "primitive: " + collective_names())
        ->type_name("C");
    cmd.add_option("--algorithm", f.algorithm,
                   full ? "algorithm name (loom-sim algorithms lists them)"
                        : "algorithm name, a comma list, or 'all'")
        ->type_name("A");
    cmd.add_option("--ranks", f.ranks,
                   "number of ranks N (must equal the topology's size; default: that size)")
        ->type_name("N");
    cmd.add_option("--topology", f.topology,
                   "star:N, ring:N, torus:4x4x2, mesh:3x5 or fullmesh:N (default star:N); "
                   "run, predict and compare also take a fabric file (*.json)")
        ->type_name("T");
    cmd.add_option("--segments", f.segments,
                   !auto_p ? "pipeline segments P (default 1)"
                           : "pipeline segments P (default 1), or 'auto': the least-time P of each "
                             "algorithm at each size, printed with it")
        ->type_name("P");
    // The same --root and --ties on every verb that costs or runs a call: a rooted
    // algorithm's routes, and the antipodal tie rule, change what the schedule loads.
    cmd.add_option("--root", f.root, "root rank; sendrecv's source (default 0)")->type_name("R");
    cmd.add_option("--ties", f.ties,
                   "antipodal ties on even rings: toward-plus (default) or source-parity")
        ->type_name("RULE");
    if (!full) {
        return;
    }
    cmd.add_option("--count", f.count,
                   "elements, collective.hh conventions; K/M/G suffixes allowed (default N)")
        ->type_name("E");
    cmd.add_option("--peer", f.peer, "sendrecv destination (default root+1 mod N)")->type_name("P");
    cmd.add_option("--channels", f.channels, "independent channels (default 1)")->type_name("C");
    cmd.add_option("--dtype-size", f.dtype_size, "bytes per element (default 4)")
        ->type_name("BYTES");
}

bool segments_auto(const call_flags& f) {
    return f.segments == "auto";
}

bool any_call_flag(const call_flags& f) {
    for (const std::string* s :
         {&f.collective, &f.algorithm, &f.ranks, &f.topology, &f.count, &f.root, &f.peer,
          &f.segments, &f.channels, &f.ties, &f.dtype_size}) {
        if (!s->empty()) {
            return true;
        }
    }
    return false;
}

result<algorithms::call> make_call(const call_flags& f) {
    algorithms::call c;
    LOOM_ASSIGN(c.coll, parse_collective_flag(f.collective));
    if (f.ranks.empty() && f.topology.empty()) {
        return invalid_argument("--ranks is required (or --topology T, whose size it defaults to)");
    }
    if (f.ranks.empty()) {
        // N from the topology: a topology that does not parse is the error to report.
        LOOM_ASSIGN(auto shape, parse_topology_flag(f.topology));
        c.nranks = shape.size();
    } else {
        LOOM_ASSIGN(c.nranks, parse_integer("--ranks", f.ranks, 1, INT32_MAX));
    }
    LOOM_ASSIGN(c.topo, topology_for(f, c.nranks));
    LOOM_ASSIGN(c.ties, parse_ties(f.ties));
    LOOM_CHECK(fill_numbers(f, c));
    return c;
}

result<const algorithms::algorithm*> find_algorithm(schedule::collective coll,
                                                    std::string_view name) {
    std::string allowed = algorithms::names_for(coll);
    std::string coll_name(schedule::collective_name(coll));
    if (allowed.empty()) {
        allowed = "none are available yet";
    }
    if (name.empty()) {
        return invalid_argument("--algorithm is required (for " + coll_name + ": " + allowed + ")");
    }
    const algorithms::algorithm* a = algorithms::find(coll, normalise_name(name));
    if (a == nullptr) {
        a = algorithms::find(coll, name);
    }
    if (a == nullptr) {
        return invalid_argument("unknown algorithm '" + std::string(name) + "' for " + coll_name +
                                " (allowed: " + allowed + ")");
    }
    return a;
}

}  // namespace loom::sim_tool
