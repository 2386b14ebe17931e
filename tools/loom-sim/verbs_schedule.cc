// SPDX-License-Identifier: Apache-2.0
// loom-sim schedule / verify: print an algorithm's schedule (schedule::to_text / to_json), or
// prove one — generated from the same flags, or read from a file in either form — with the
// verifier (schedule::verify) and print its statistics.
//
// verify's statistics sit beside the algorithm's own prediction when the schedule names a
// catalogue algorithm, so a reader sees observed rounds next to n_alpha and observed bytes
// next to n_beta·M (the check tests/unit/algorithms makes, available for any call).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>

#include "base/check.hh"
#include "base/text_file.hh"
#include "loom_sim.hh"

namespace loom::sim_tool {
namespace {

// The whole schedule is materialised (every rank's steps); past this, predict is the tool.
constexpr int max_materialised_ranks = 1 << 16;

struct schedule_flags {
    call_flags call;
    std::string format;  // text | json
};

struct verify_flags {
    call_flags call;
    std::string file;
    bool stats = false;
    bool pairs = false;
    bool json  = false;
};

result<schedule::schedule> generate_from(const call_flags& f) {
    LOOM_ASSIGN(algorithms::call c, make_call(f));
    LOOM_ASSIGN(const algorithms::algorithm* a, find_algorithm(c.coll, f.algorithm));
    if (c.nranks > max_materialised_ranks) {
        return invalid_argument("--ranks " + std::to_string(c.nranks) + " is above " +
                                std::to_string(max_materialised_ranks) +
                                ", the most a whole schedule is built for (predict has no limit)");
    }
    return algorithms::generate(*a, c);
}

result<schedule::schedule> load(const verify_flags& f) {
    if (!f.file.empty()) {
        if (any_call_flag(f.call)) {
            return invalid_argument(
                "--schedule excludes the call flags (--collective, "
                "--algorithm, --ranks, …): the file states the call");
        }
        return read_schedule_file(f.file);
    }
    if (f.call.collective.empty() && f.call.algorithm.empty()) {
        return invalid_argument(
            "verify needs --schedule FILE or a call (--collective, "
            "--algorithm, --ranks …)");
    }
    return generate_from(f.call);
}

status run_schedule(const schedule_flags& f) {
    if (!f.format.empty() && f.format != "text" && f.format != "json") {
        return invalid_argument("--format: unknown format '" + f.format +
                                "' (allowed: text, json)");
    }
    LOOM_ASSIGN(schedule::schedule s, generate_from(f.call));
    if (f.format == "json") {
        std::cout << schedule::to_json(s) << '\n';
    } else {
        std::cout << schedule::to_text(s);
    }
    return status::ok();
}

status run_verify(const verify_flags& f) {
    if (f.pairs && !f.stats && !f.json) {
        return invalid_argument("--pairs needs --stats or --json");
    }
    LOOM_ASSIGN(schedule::schedule s, load(f));
    schedule::verify_options options;
    options.pair_bytes             = f.pairs;
    schedule::verify_report report = schedule::verify(s, options);
    if (!report.result) {
        return report.result;
    }
    if (f.json) {
        std::cout << verify_json(s, report.stats, f.pairs).dump(2) << '\n';
        return status::ok();
    }
    std::cout << verify_summary(s, report.stats) << '\n';
    if (f.stats) {
        print_verify_stats(std::cout, s, report.stats, f.pairs);
    }
    return status::ok();
}

}  // namespace

void add_schedule_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto sf       = std::make_shared<schedule_flags>();
    CLI::App* cmd = app.add_subcommand("schedule", "print an algorithm's schedule, every rank");
    add_call_flags(*cmd, sf->call, call_flag_set::full);
    cmd->add_option("--format", sf->format, "text (default) or json")->type_name("FORMAT");
    verbs.push_back({cmd, [sf] { return run_schedule(*sf); }});

    auto vf = std::make_shared<verify_flags>();
    cmd     = app.add_subcommand("verify",
                                 "prove a schedule correct (values, matching, deadlock, races)");
    add_call_flags(*cmd, vf->call, call_flag_set::full);
    cmd->add_option("--schedule", vf->file,
                    "verify this file instead (text or JSON form; '-' reads stdin)")
        ->type_name("FILE");
    cmd->add_flag("--stats", vf->stats,
                  "print the statistics: rounds, bytes and steps per rank, concurrent peers, "
                  "and the algorithm's prediction beside them");
    cmd->add_flag("--pairs", vf->pairs, "with --stats or --json: bytes per directed pair");
    cmd->add_flag("--json", vf->json, "the statistics as one JSON object");
    cmd->footer(
        "Exit status 0 and a one-line summary when the schedule is correct; 1 and the "
        "reason on stderr when it is not.");
    verbs.push_back({cmd, [vf] { return run_verify(*vf); }});
}

// Standard input for "-", else a regular file (never a FIFO, which would block), both
// bounded by max_schedule_file_bytes.
result<schedule::schedule> read_schedule_file(const std::string& path) {
    LOOM_ASSIGN(std::string text,
                path == "-"
                    ? read_text_stream(0, "schedule on standard input", max_schedule_file_bytes)
                    : read_text_file(path, "schedule file", max_schedule_file_bytes));
    auto s = schedule::parse_any(text);
    if (!s) {
        status st = s.error();
        return st.prefix((path == "-" ? std::string("stdin") : path) + ": ");
    }
    return s;
}

}  // namespace loom::sim_tool
