// SPDX-License-Identifier: Apache-2.0
// loomrun: start N loom ranks and watch them (docs/architecture.md#layout, tools/loomrun).
//
// A thin main: options.cc parses, launcher.cc runs the job; every failure of loomrun itself
// is one line "loomrun: <reason>" on stderr and a non-zero exit (loomrun.hh lists them).
#include <cstdio>
#include <exception>
#include <iostream>

#include "base/params.hh"
#include "comm/params_catalog.hh"
#include "loomrun.hh"

namespace loom::loomrun {
namespace {

int fail(const std::string& reason, int code) {
    std::cout.flush();
    std::fprintf(stderr, "loomrun: %s\n", reason.c_str());
    return code;
}

int run(int argc, char** argv) {
    parsed p = parse_options(argc, argv);
    if (p.what == parsed::action::print) {
        std::cout << p.text;
        return exit_ok;
    }
    if (p.what == parsed::action::fail) {
        return fail(p.text, exit_bad_args);
    }
    if (p.opts.show_version) {
        std::cout << "loomrun " << loom_version() << "\nfeatures: " << loom_build_features()
                  << "\n";
        return exit_ok;
    }
    // An invalid LOOM_* value in loomrun's environment would reach every rank: say so here.
    const auto& registry = params::registry::global();
    if (!registry.load_status()) {
        return fail(registry.load_status().message(), exit_bad_args);
    }
    comm::warn_unknown_variables();
    if (p.opts.show_config) {
        std::cout << (p.opts.show_markdown ? registry.markdown() : registry.describe());
        return exit_ok;
    }
    std::cout.flush();
    return run_job(p.opts);
}

}  // namespace
}  // namespace loom::loomrun

int main(int argc, char** argv) {
    try {
        return loom::loomrun::run(argc, argv);
    } catch (const std::exception& e) {
        return loom::loomrun::fail(std::string("internal error: ") + e.what(), 1);
    }
}
