// SPDX-License-Identifier: Apache-2.0
// loomctl: the control plane's command line (docs/tools/loomctl.md). This slice has the verbs
// `status` and `members`, each a table by default or the controller's JSON with --json.
// Exit 0 on an answer, 1 when the controller refused or could not be reached (one line
// "loomctl: reason"), 2 for a usage error.
#include <loom/loom.h>

#include <iostream>
#include <string_view>

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

int run_verb(const options& o, const std::string& token) {
    const std::string path = o.what == verb::status ? "/v1/status" : "/v1/members";
    auto answer            = get_json(o, token, path);
    if (!answer) {
        return fail(answer.error().message(), exit_failed);
    }
    if (o.json) {
        std::cout << answer->dump(2) << '\n';
    } else {
        std::cout << (o.what == verb::status ? status_table(*answer) : members_table(*answer));
    }
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
