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
    // `loom-switch ticket --key-file F --job NAME`: print the job's LOOM_INC_TICKET.
    bool ticket = false;
    std::string ticket_job;
};

/// Declares every flag on `app`, bound to `o`.
void add_options(CLI::App& app, options& o);
/// Checks what CLI11 cannot: address forms, probabilities, counts.
status check_options(const options& o);
/// "tcp:HOST:PORT" (PORT 0..65535) or "shm:NAME"; `what` names the flag in the message.
status check_address(const std::string& address, const std::string& what);

}  // namespace loom::switch_tool
