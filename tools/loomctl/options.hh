// SPDX-License-Identifier: Apache-2.0
// loomctl's verbs and flags, and where the controller and its token come from: the flags,
// else LOOM_CONTROLLER and LOOM_CONTROLLER_TOKEN_FILE (runtime/bootstrap/controller_params.hh).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "base/net.hh"
#include "base/status.hh"

namespace loom::ctl_tool {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // the request was refused or failed
constexpr int exit_bad_args = 2;

enum class verb { none, status, members, routes, trees, drain, undrain, slots, jobs };

struct options {
    verb what = verb::none;
    std::string controller;  // HOST:PORT
    net::host_port where;
    std::string token_file;
    bool json = false;
    std::string from, to;  // routes A B (to empty with --table: A's route table)
    bool table = false;
    std::string ranks;     // trees --ranks: can these ranks reduce in one tree?
    std::string member;    // drain / undrain: an id or a name
    double timeout_s = 5;  // every wait of a request: connect, send, answer
};

/// Declares the verbs and flags on `app`, bound to `o`.
void add_options(CLI::App& app, options& o);
/// Fills what the flags left out from the environment and checks it all.
status resolve_options(options& o);

}  // namespace loom::ctl_tool
