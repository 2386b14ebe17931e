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
    if (!(o.timeout_s > 0 && o.timeout_s <= 3600)) {
        return invalid_argument("--timeout must be between 0 and 3600 seconds");
    }
    return status::ok();
}

}  // namespace loom::ctl_tool
