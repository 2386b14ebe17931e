// SPDX-License-Identifier: Apache-2.0
// loom-ctld's flags and their checks (one clear message per bad value).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

#include "base/net.hh"
#include "base/status.hh"
#include "routing/dor.hh"

namespace loom::ctld {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // could not listen, read or write its state
constexpr int exit_bad_args = 2;

struct options {
    std::string listen = "127.0.0.1:29600";
    net::host_port where;  // --listen, parsed
    std::string token_file;
    std::string state_file;  // empty: the table lives in memory only
    double heartbeat_s    = 1.0;
    size_t max_body_bytes = 64 * 1024;
    double rate_per_s     = 100;  // requests per second per client; 0: unlimited
    size_t max_members    = 65536;
    uint64_t slot_quota   = 0;  // in-network slots one job may hold in all; 0: no quota
    int threads           = 4;
    std::string fabric;  // a shape or fabric file; empty: no routes or trees are served
    std::string ties_name  = "toward-plus";
    routing::tie_rule ties = routing::tie_rule::toward_plus;  // --ties, parsed
};

/// Declares every flag on `app`, bound to `o`.
void add_options(CLI::App& app, options& o);
/// Checks what CLI11 cannot: the address form, ranges.
status check_options(options& o);

}  // namespace loom::ctld
