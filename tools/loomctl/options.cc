// SPDX-License-Identifier: Apache-2.0
// loomctl's flags (options.hh).
#include "options.hh"

#include "bootstrap/controller_params.hh"

namespace loom::ctl_tool {

namespace controller_params = bootstrap::controller_params;

namespace {

// The flags every verb takes, so they may come before or after the verb.
void add_common(CLI::App& app, options& o) {
    app.add_option("--controller", o.controller,
                   "the controller's HOST:PORT (default: LOOM_CONTROLLER)");
    app.add_option("--token-file", o.token_file,
                   "file holding the bearer token, mode 0600 (default: "
                   "LOOM_CONTROLLER_TOKEN_FILE)");
    app.add_option("--timeout", o.timeout_s,
                   "seconds to wait for the controller (connect, send, answer)")
        ->capture_default_str();
}

}  // namespace

void add_options(CLI::App& app, options& o) {
    add_common(app, o);
    app.require_subcommand(1);
    auto* status_verb = app.add_subcommand("status",
                                           "the controller's version, uptime and "
                                           "member counts");
    add_common(*status_verb, o);
    status_verb->add_flag("--json", o.json, "print the controller's answer as JSON");
    status_verb->callback([&o] { o.what = verb::status; });
    auto* members_verb =
        app.add_subcommand("members", "every member: id, name, kind, state, last heartbeat");
    add_common(*members_verb, o);
    members_verb->add_flag("--json", o.json, "print the controller's answer as JSON");
    members_verb->callback([&o] { o.what = verb::members; });

    auto* routes_verb = app.add_subcommand(
        "routes",
        "the route from node A to node B (DOR on a lattice, with ports and VCs), or "
        "with --table, node A's route table, as the controller serves them now");
    add_common(*routes_verb, o);
    routes_verb->add_option("A", o.from, "a node of the controller's fabric")->required();
    routes_verb->add_option("B", o.to, "another node (not with --table)");
    routes_verb->add_flag("--table", o.table, "node A's route table: next hop per rank");
    routes_verb->add_flag("--json", o.json, "print the controller's answer as JSON");
    routes_verb->callback([&o] { o.what = verb::routes; });

    auto* trees_verb = app.add_subcommand(
        "trees",
        "the aggregation trees without the members that are down or drained, and the "
        "ranks left without an in-network path");
    add_common(*trees_verb, o);
    trees_verb->add_option("--ranks", o.ranks,
                           "also say whether one tree holds these ranks ('all' or 0,1,2)");
    trees_verb->add_flag("--json", o.json, "print the controller's answer as JSON");
    trees_verb->callback([&o] { o.what = verb::trees; });

    auto* slots_verb = app.add_subcommand(
        "slots", "each switch's and DPU's in-network slots: capacity, used, free, by which job");
    add_common(*slots_verb, o);
    slots_verb->add_flag("--json", o.json, "print the controller's answer as JSON");
    slots_verb->callback([&o] { o.what = verb::slots; });
    auto* jobs_verb = app.add_subcommand(
        "jobs", "the jobs holding in-network slot allocations: communicators, slots, revoked");
    add_common(*jobs_verb, o);
    jobs_verb->add_flag("--json", o.json, "print the controller's answer as JSON");
    jobs_verb->callback([&o] { o.what = verb::jobs; });

    for (verb v : {verb::drain, verb::undrain}) {
        bool drain = v == verb::drain;
        auto* sub  = app.add_subcommand(drain ? "drain" : "undrain",
                                       drain ? "take a member out of service: routes and trees "
                                                "leave it out (it keeps its lease)"
                                              : "put a drained member back in service");
        add_common(*sub, o);
        sub->add_option("MEMBER", o.member, "the member's id or name")->required();
        sub->add_flag("--json", o.json, "print the controller's answer as JSON");
        sub->callback([&o, v] { o.what = v; });
    }
}

status resolve_options(options& o) {
    if (o.controller.empty()) {
        o.controller = controller_params::address.get();
    }
    if (o.controller.empty()) {
        return invalid_argument("no controller: --controller HOST:PORT or LOOM_CONTROLLER");
    }
    if (const char* why = net::parse_host_port(o.controller, &o.where)) {
        return invalid_argument("controller '" + o.controller + "' " + why +
                                " (expected HOST:PORT)");
    }
    if (o.token_file.empty()) {
        o.token_file = controller_params::token_file.get();
    }
    if (o.token_file.empty()) {
        return invalid_argument(
            "no token: --token-file FILE or LOOM_CONTROLLER_TOKEN_FILE (the controller's "
            "bearer token, mode 0600)");
    }
    if (o.what == verb::routes && o.table != o.to.empty()) {
        return invalid_argument(o.table ? "routes --table takes one node, not two"
                                        : "routes needs two nodes: loomctl routes A B");
    }
    if (!(o.timeout_s > 0 && o.timeout_s <= 3600)) {
        return invalid_argument("--timeout must be between 0 and 3600 seconds");
    }
    return status::ok();
}

}  // namespace loom::ctl_tool
