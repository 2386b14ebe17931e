// SPDX-License-Identifier: Apache-2.0
// loom-sim: print, verify and predict collective schedules (docs/architecture.md#layout, tools/).
//
// A thin main: CLI11 parses, one verb runs, and its status becomes the exit status. Every
// failure — a CLI11 parse error, a verb's status, even an unexpected exception — ends as ONE
// line "loom-sim: <reason>" on stderr (docs/architecture.md#conventions), so scripts can rely on it
// and nobody sees "terminate called".
#include <algorithm>
#include <iostream>
#include <new>

#include "base/params.hh"
#include "comm/params_catalog.hh"
#include "loom_sim.hh"
#include "tools/common/cli_parse.hh"

namespace loom::sim_tool {
namespace {

const char* const verb_list_text =
    "algorithms, schedule, verify, predict, overview, run, compare, topology, explain";

// Library messages are one line today; a verifier's wait cycle or a parser's excerpt might
// not be tomorrow, and the one-line promise is the tool's, so it is kept here.
std::string one_line(std::string text) {
    for (char& ch : text) {
        ch = (ch == '\n' || ch == '\r') ? ' ' : ch;
    }
    text.erase(text.find_last_not_of(' ') + 1);
    return text;
}

int fail(const std::string& reason, int code) {
    std::cout.flush();
    std::cerr << "loom-sim: " << one_line(reason) << '\n';
    return code;
}

// The tool's own messages already say what was wrong; other classes carry their name
// ("not applicable: …", "parse error: …", "verification failed: …").
int fail(const status& st) {
    if (st.code() == LOOM_ERR_INVALID_ARGUMENT) {
        return fail(st.message(), exit_bad_args);
    }
    return fail(st.to_string(), st.code() == LOOM_ERR_VERIFY ? exit_failed : exit_bad_args);
}

std::string version_text() {
    return std::string("loom-sim ") + loom_version() + "\nfeatures: " + loom_build_features();
}

int run(int argc, char** argv) {
    CLI::App app{"Print, verify and predict loom collective schedules.", "loom-sim"};
    app.set_version_flag("--version", version_text(), "print the version and build features");
    bool show_config = false;
    app.add_flag("--config", show_config,
                 "print every LOOM_* parameter: value, default, unit, description");
    // An invalid LOOM_* value in the environment is an error, never silently ignored
    // (docs/architecture.md#rule-parameters).
    const auto& registry = params::registry::global();
    if (!registry.load_status()) {
        return fail(registry.load_status().message(), exit_bad_args);
    }
    comm::warn_unknown_variables();
    app.require_subcommand(0, 1);
    app.footer("Verbs: " + std::string(verb_list_text) +
               ". Run 'loom-sim VERB --help' for a verb's flags.\n"
               "Exit status: 0 success; 1 the schedule failed verification; 2 bad input or not\n"
               "applicable. Errors are one line on stderr: 'loom-sim: <reason>'.");
    std::vector<verb> verbs;
    add_catalogue_verbs(app, verbs);
    add_schedule_verbs(app, verbs);
    add_predict_verbs(app, verbs);
    add_run_verbs(app, verbs);
    add_compare_verbs(app, verbs);
    add_topology_verbs(app, verbs);
    add_explain_verbs(app, verbs);
    // CLI11 would call an unknown verb "an argument not expected"; name it for what it is.
    if (argc > 1 && argv[1][0] != '-' &&
        std::none_of(verbs.begin(), verbs.end(),
                     [&](const verb& v) { return v.command->get_name() == argv[1]; })) {
        return fail(std::string("unknown verb '") + argv[1] + "' (verbs: " + verb_list_text + ")",
                    exit_bad_args);
    }
    if (auto code =
            tools::parse_or_exit(app, argc, argv, exit_bad_args,
                                 [](const std::string& why, int c) { return fail(why, c); })) {
        return *code;
    }
    if (show_config) {
        std::cout << registry.describe();
        return exit_ok;
    }
    for (const verb& v : verbs) {
        if (v.command->parsed()) {
            status st = v.run();
            std::cout.flush();
            return st ? exit_ok : fail(st);
        }
    }
    return fail(std::string("a verb is required: ") + verb_list_text + " (see loom-sim --help)",
                exit_bad_args);
}

// Nothing should throw past the verbs; if something does (an allocation, a library bug),
// the user still gets one line and a non-zero exit, never "terminate called".
int guarded_run(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::bad_alloc&) {
        return fail("out of memory (try fewer ranks or a smaller --count)", exit_bad_args);
    } catch (const std::exception& e) {
        return fail(std::string("internal error: ") + e.what(), exit_bad_args);
    } catch (...) {
        return fail("internal error: unknown exception", exit_bad_args);
    }
}

}  // namespace
}  // namespace loom::sim_tool

int main(int argc, char** argv) {
    return loom::sim_tool::guarded_run(argc, argv);
}
