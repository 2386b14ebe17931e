// SPDX-License-Identifier: Apache-2.0
// loomctl: the control plane's command line (docs/tools/loomctl.md): the verbs `status`,
// `members`, `routes`, `trees`, `drain`, `undrain`, `slots` and `jobs`, each text by default or the
// controller's JSON with --json.
// Exit 0 on an answer, 1 when the controller refused or could not be reached (one line
// "loomctl: reason"), 2 for a usage error.
#include <loom/loom.h>

#include <algorithm>
#include <iostream>
#include <string_view>

#include "base/check.hh"
#include "client.hh"
#include "options.hh"
#include "render.hh"
#include "tools/common/cli_parse.hh"
#include "tools/common/secret_file.hh"

namespace loom::ctl_tool {
namespace {

int fail(std::string_view reason, int code) {
    return tools::fail_line("loomctl", reason, code);
}

std::string version_text() {
    return tools::version_text("loomctl", "(API v1)");
}

// The id of the member named or numbered `which`.
result<uint64_t> member_id(const options& o, const std::string& token, const std::string& which) {
    if (!which.empty() && std::all_of(which.begin(), which.end(), ::isdigit) && which.size() < 20) {
        return std::stoull(which);
    }
    LOOM_ASSIGN(auto members, get_json(o, token, "/v1/members"));
    for (const auto& m : members.value("members", nlohmann::json::array())) {
        if (m.value("name", "") == which && m.contains("id")) {
            return m["id"].template get<uint64_t>();
        }
    }
    return not_applicable("no member named '" + which + "' (loomctl members lists them)");
}

// The answer of the verb's request, and how it reads as text.
result<nlohmann::json> ask(const options& o, const std::string& token) {
    switch (o.what) {
        case verb::status:
            return get_json(o, token, "/v1/status");
        case verb::members:
            return get_json(o, token, "/v1/members");
        case verb::routes:
            return get_json(
                o, token,
                o.table ? "/v1/routes/" + query_escape(o.from)
                        : "/v1/routes?from=" + query_escape(o.from) + "&to=" + query_escape(o.to));
        case verb::trees:
            return get_json(
                o, token, "/v1/trees" + (o.ranks.empty() ? "" : "?ranks=" + query_escape(o.ranks)));
        case verb::slots:
            return get_json(o, token, "/v1/slots");
        case verb::jobs:
            return get_json(o, token, "/v1/jobs");
        case verb::drain:
        case verb::undrain: {
            LOOM_ASSIGN(uint64_t id, member_id(o, token, o.member));
            return post_json(o, token,
                             "/v1/members/" + std::to_string(id) +
                                 (o.what == verb::drain ? "/drain" : "/undrain"),
                             nlohmann::json::object());
        }
        case verb::none:
            break;
    }
    return invalid_argument("no verb");
}

std::string as_text(const options& o, const nlohmann::json& answer) {
    switch (o.what) {
        case verb::status:
            return status_table(answer);
        case verb::members:
            return members_table(answer);
        case verb::routes:
            return o.table ? route_table_text(answer) : route_text(answer);
        case verb::trees:
            return trees_text(answer);
        case verb::slots:
            return slots_table(answer);
        case verb::jobs:
            return jobs_table(answer);
        case verb::drain:
        case verb::undrain:
            return "member " + o.member + (o.what == verb::drain ? " drained" : " undrained") +
                   "\n";
        case verb::none:
            break;
    }
    return "";
}

int run_verb(const options& o, const std::string& token) {
    auto answer = ask(o, token);
    if (!answer) {
        return fail(answer.error().message(), exit_failed);
    }
    std::cout << (o.json ? answer->dump(2) + "\n" : as_text(o, *answer));
    std::cout.flush();
    return exit_ok;
}

int run(int argc, char** argv) {
    CLI::App app{"The loom control plane's command line (talks to loom-ctld).", "loomctl"};
    options o;
    add_options(app, o);
    app.set_version_flag("--version", version_text(), "print the version and build features");
    if (auto code =
            tools::parse_or_exit(app, argc, argv, exit_bad_args,
                                 [](const std::string& why, int c) { return fail(why, c); })) {
        return *code;
    }
    if (status st = resolve_options(o); !st) {
        return fail(st.message(), exit_bad_args);
    }
    auto token = tools::read_token_file(o.token_file, "--token-file");
    if (!token) {
        return fail(token.error().message(), exit_bad_args);
    }
    return run_verb(o, *token);
}

}  // namespace
}  // namespace loom::ctl_tool

int main(int argc, char** argv) {
    try {
        return loom::ctl_tool::run(argc, argv);
    } catch (const std::exception& e) {
        return loom::ctl_tool::fail(std::string("unexpected error: ") + e.what(),
                                    loom::ctl_tool::exit_failed);
    }
}
