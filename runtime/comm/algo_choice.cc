// Algorithm choice for a call: the attribute, else LOOM_ALGO, else the tuner.
//
// LOOM_ALGO has one strict grammar, prim=name(;prim=name)* with no spaces, each primitive
// at most once: a typo must not silently run another algorithm (STYLE.md §6.9). Names are
// checked against the catalogue when the communicator is created; whether an algorithm
// applies (power of two, torus …) depends on the call, so that is checked per call, and
// an inapplicable choice fails the call with the names that would apply.
//
// Without either, the tuner chooses (runtime/tuner, comm_tuner.cc): the applicable
// algorithm of least predicted cost with the communicator's agreed parameters.
#include <string>

#include "comm/comm.hh"

namespace loom::comm {
namespace {

std::string primitive_list() {
    std::string out;
    for (int i = 0; i < schedule::collective_count; ++i) {
        out += (i ? ", " : "") +
               std::string(schedule::collective_name(static_cast<schedule::collective>(i)));
    }
    return out;
}

status parse_entry(std::string_view entry, std::string_view spec, std::string* names) {
    auto quote = [&] { return "LOOM_ALGO='" + std::string(spec) + "': "; };
    size_t eq  = entry.find('=');
    if (entry.empty() || eq == std::string_view::npos || eq == 0 || eq + 1 == entry.size() ||
        entry.find('=', eq + 1) != std::string_view::npos) {
        return parse_error(quote() + "'" + std::string(entry) +
                           "' is not prim=name (grammar: prim=name(;prim=name)*, e.g. "
                           "allreduce=rabenseifner;alltoall=pairwise)");
    }
    std::string_view prim = entry.substr(0, eq), name = entry.substr(eq + 1);
    for (char ch : entry) {
        if (ch == ' ' || ch == '\t' || ch == ',') {
            return parse_error(quote() + "'" + std::string(entry) +
                               "' contains a space or comma (grammar: prim=name(;prim=name)*)");
        }
    }
    schedule::collective c;
    if (!schedule::parse_collective(prim, &c)) {
        return invalid_argument(quote() + "unknown primitive '" + std::string(prim) +
                                "' (allowed: " + primitive_list() + ")");
    }
    if (!algorithms::find(c, name)) {
        return invalid_argument(quote() + "unknown " + std::string(prim) + " algorithm '" +
                                std::string(name) + "' (allowed: " + algorithms::names_for(c) +
                                ")");
    }
    std::string& slot = names[static_cast<int>(c)];
    if (!slot.empty()) {
        return invalid_argument(quote() + std::string(prim) + " is given twice");
    }
    slot = std::string(name);
    return status::ok();
}

}  // namespace

result<algo_table> algo_table::parse(std::string_view spec) {
    algo_table table;
    if (spec.empty()) {
        return table;
    }
    size_t begin = 0;
    for (;;) {
        size_t end = spec.find(';', begin);
        std::string_view entry =
            spec.substr(begin, end == std::string_view::npos ? spec.npos : end - begin);
        if (status st = parse_entry(entry, spec, table.names_); !st) {
            return st;
        }
        if (end == std::string_view::npos) {
            break;
        }
        begin = end + 1;
    }
    return table;
}

std::string applicable_names(const algorithms::call& c) {
    std::string out;
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        if (a->primitive == c.coll && algorithms::check_call(*a, c)) {
            out += (out.empty() ? "" : ", ") + std::string(a->name);
        }
    }
    return out.empty() ? "none" : out;
}

result<const algorithms::algorithm*> choose_algorithm(const algorithms::call& c,
                                                      std::string_view requested,
                                                      const algo_table& table,
                                                      const algorithms::algorithm* tuned,
                                                      std::string* origin_out) {
    std::string_view prim = schedule::collective_name(c.coll);
    std::string origin    = "attribute";
    std::string_view name = requested;
    if (name.empty()) {
        name   = table.for_primitive(c.coll);
        origin = "LOOM_ALGO";
    }
    if (origin_out) {
        *origin_out = name.empty() ? "tuner" : origin;
    }
    if (name.empty()) {
        if (!tuned) {
            return status(LOOM_ERR_NOT_APPLICABLE,
                          std::string(prim) + ": no algorithm applies to this call (" +
                              std::to_string(c.nranks) + " ranks, " + c.topo.to_string() + ")");
        }
        return tuned;
    }
    if (origin == "attribute") {
        origin = "the call's attribute";
    }
    const algorithms::algorithm* a = algorithms::find(c.coll, name);
    if (!a) {
        return invalid_argument(std::string(prim) + ": unknown algorithm '" + std::string(name) +
                                "' (from " + origin +
                                "); allowed for this call: " + applicable_names(c));
    }
    if (status st = algorithms::check_call(*a, c); !st) {
        return status(st.code(), st.message() + " (from " + origin +
                                     "); allowed for this call: " + applicable_names(c));
    }
    return a;
}

}  // namespace loom::comm
