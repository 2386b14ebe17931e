// SPDX-License-Identifier: Apache-2.0
// One way for loom's tools to parse their command line with CLI11: --help and --version are
// printed by CLI11 and end the tool with 0; any other parse error is reported in the tool's
// one-line form (`tool: reason`) through its own `fail` and ends it with its usage code.
// With the one-line error itself and the --version text every tool prints.
#pragma once

#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace loom::tools {

/// nullopt when argv parsed; otherwise the code the tool's main returns.
template <class Fail>
std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv, int usage_code,
                                 Fail&& fail) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            return app.exit(e);  // --help, --version: CLI11 prints them to stdout
        }
        return fail(std::string(e.what()), usage_code);
    }
    return std::nullopt;
}

/// `tool: reason` on stderr (after whatever stdout holds), and `code` for main to return.
inline int fail_line(std::string_view tool, std::string_view reason, int code) {
    std::cout.flush();
    std::cerr << tool << ": " << reason << '\n';
    return code;
}

/// What --version prints: the tool, loom's version, `detail`, and the build's features.
inline std::string version_text(std::string_view tool, std::string_view detail) {
    return std::string(tool) + " " + loom_version() + " " + std::string(detail) +
           "\nfeatures: " + loom_build_features();
}

}  // namespace loom::tools
