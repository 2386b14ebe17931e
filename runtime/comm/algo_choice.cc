// SPDX-License-Identifier: Apache-2.0
// The algorithm choice for a call: the attribute, else LOOM_ALGO, else the tuner, made by
// one function (communicator::choose) for both the call and loom_comm_explain, so an
// explanation never differs from what runs.
//
// LOOM_ALGO has one strict grammar, prim=name(;prim=name)* with no spaces, each primitive
// at most once: a typo must not silently run another algorithm
// (docs/architecture.md#rule-no-silent-fallback). Names are checked against the catalogue when the
// communicator is created; whether an algorithm applies (power of two, torus, an aggregation node
// that carries the dtype and op …) depends on the call, so that is checked per call.
//
// The rule for an explicit algorithm (attribute or LOOM_ALGO) that cannot run a call: the
// call fails (LOOM_ERR_NOT_APPLICABLE; an unknown name LOOM_ERR_INVALID_ARGUMENT) with a
// message naming the algorithm, the reason and the names that would apply; no rank runs
// another algorithm instead. The reason is the same on every rank (admission is agreed, the
// rest is a function of the call), so every rank fails alike. A barrier is allreduce's
// one-byte case that the runtime makes, not a primitive of LOOM_ALGO: it takes its
// attribute's algorithm, else the tuner's.
//
// Without a name, the tuner chooses (runtime/tuner, comm_tuner.cc): the algorithm of least
// predicted cost with the communicator's agreed parameters, among those tuner::admits.
#include <string>

#include "base/check.hh"
#include "comm/comm.hh"
#include "tuner/tuner.hh"

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
        LOOM_CHECK(parse_entry(entry, spec, table.names_));
        if (end == std::string_view::npos) {
            break;
        }
        begin = end + 1;
    }
    return table;
}

std::string applicable_names(const algorithms::call& c, const tuner::in_network_state& inc) {
    std::string out;
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        if (a->primitive == c.coll && tuner::admits(*a, c, inc)) {
            out += (out.empty() ? "" : ", ") + std::string(a->name);
        }
    }
    return out.empty() ? "none" : out;
}

result<const algorithms::algorithm*> check_named(const algorithms::call& c, std::string_view name,
                                                 std::string_view origin,
                                                 const tuner::in_network_state& inc) {
    const std::string who =
        std::string(schedule::collective_name(c.coll)) + " " + std::string(name);
    const algorithms::algorithm* a = algorithms::find(c.coll, name);
    if (!a) {
        return invalid_argument(std::string(schedule::collective_name(c.coll)) +
                                ": unknown algorithm '" + std::string(name) + "' (from " +
                                std::string(origin) +
                                "); allowed for this call: " + applicable_names(c, inc));
    }
    if (status st = tuner::admits(*a, c, inc); !st) {
        // The constraints' messages name the algorithm; the node's reason does not.
        std::string why = st.message().starts_with(who) ? st.message() : who + ": " + st.message();
        return status(st.code(), why + " (from " + std::string(origin) +
                                     "); allowed for this call: " + applicable_names(c, inc));
    }
    return a;
}

result<communicator::choice> communicator::choose(call_kind kind, const algorithms::call& c,
                                                  std::string_view requested, loom_dtype_t dtype,
                                                  loom_op_t op) {
    choice out;
    std::string_view name = requested;
    out.origin            = "attribute";
    if (name.empty() && kind != call_kind::barrier) {
        name       = settings_.algos.for_primitive(c.coll);
        out.origin = "LOOM_ALGO";
    }
    if (name.empty()) {
        out.origin = "tuner";
        out.algo   = tuned_choice(c, dtype, op);
        if (!out.algo) {
            return status(LOOM_ERR_NOT_APPLICABLE,
                          "rank " + std::to_string(rank()) + ": " +
                              std::string(schedule::collective_name(c.coll)) +
                              ": no algorithm applies to this call (" + std::to_string(c.nranks) +
                              " ranks, " + c.topo.to_string() + ")");
        }
        return out;
    }
    auto a = check_named(c, name, out.origin == "attribute" ? "the call's attribute" : out.origin,
                         in_network_for(c, dtype, op));
    if (!a) {
        return status(a.error()).prefix("rank " + std::to_string(rank()) + ": ");
    }
    out.algo = *a;
    return out;
}

}  // namespace loom::comm
