// SPDX-License-Identifier: Apache-2.0
// loom-switch options: the flags, and their checks (one clear message per bad value).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "base/status.hh"
#include "inc/node/switch_node.hh"

namespace loom::switch_tool {

constexpr int exit_ok       = 0;
constexpr int exit_failed   = 1;  // the node or the query failed
constexpr int exit_bad_args = 2;

struct options {
    inc::switch_config node;
    std::string ready_file;       // written with the address once listening
    double stats_interval_s = 0;  // 0: statistics only at exit
    std::string stats_address;    // --stats: query that node and exit
    std::string key_file;         // the node key (created when missing)
    double max_memory_mib = 256, job_memory_mib = 64;
    // Which per-job limits the command line set: an unset one follows a smaller node limit,
    // a set one larger than its node limit is refused.
    bool job_quota_given = false, job_memory_given = false;
    // `loom-switch ticket --key-file F --job NAME`: print the job's LOOM_INC_TICKET.
    bool ticket = false;
    std::string ticket_job;
};

/// Declares every flag on `app`, bound to `o`.
void add_options(CLI::App& app, options& o);
/// Records which flags were given (after app.parse).
void note_given(const CLI::App& app, options& o);
/// Checks what CLI11 cannot: address forms, probabilities, counts, limits that contradict
/// each other. Fills an unset per-job limit from a smaller node limit.
status check_options(options& o);
/// --ready-file: its folder exists and takes a new file, checked before the node starts.
status check_ready_file(const std::string& path);
/// "tcp:HOST:PORT" (PORT 0..65535) or "shm:NAME"; `what` names the flag in the message.
status check_address(const std::string& address, const std::string& what);

}  // namespace loom::switch_tool
