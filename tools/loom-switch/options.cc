// SPDX-License-Identifier: Apache-2.0
// loom-switch options (options.hh).
#include "options.hh"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "base/net.hh"

namespace loom::switch_tool {

void add_options(CLI::App& app, options& o) {
    app.add_option("--listen", o.node.listen,
                   "address to accept links on: tcp:HOST:PORT (port 0: any free one), "
                   "shm:NAME, ofi:PROVIDER (libfabric; ofi: alone: LOOM_OFI_PROVIDER or the "
                   "best available), dpdk:memif:NAME or dpdk:af_packet:IFACE (DPDK ports)");
    app.add_option("--parent", o.node.parent,
                   "the parent node's address (a tree's next level); none: answer locally");
    app.add_option("--slots", o.node.slots, "aggregation slots in the node's pool")
        ->capture_default_str();
    app.add_option("--job-quota", o.node.job_quota, "slots one job may hold over its groups")
        ->capture_default_str();
    app.add_option("--drop", o.node.drop,
                   "probability of dropping a received data packet (loss injection)");
    app.add_option("--dup", o.node.dup,
                   "probability of handling a received data packet twice (one not dropped)");
    app.add_option("--seed", o.node.seed, "seed of the loss injection")->capture_default_str();
    app.add_option("--ready-file", o.ready_file,
                   "file to write the listening address to once the node is up");
    app.add_option("--stats-interval", o.stats_interval_s,
                   "print the statistics every S seconds (0: only at exit)");
    app.add_option("--stats", o.stats_address,
                   "query the node at ADDR for its statistics, print them and exit");
    app.add_option("--key-file", o.key_file,
                   "the node key (64 hex digits, mode 0600; created with a fresh key when "
                   "missing): joins must prove their job's ticket");
    app.add_flag("--insecure", o.node.insecure,
                 "no key: admit every well-formed join (loopback and shm listeners only)");
    app.add_option("--max-members", o.node.max_members, "members of one group at most")
        ->capture_default_str();
    app.add_option("--max-memory", o.max_memory_mib, "aggregation memory of the node, MiB")
        ->capture_default_str();
    app.add_option("--job-memory", o.job_memory_mib, "aggregation memory of one job, MiB")
        ->capture_default_str();
    app.add_option("--max-links", o.node.max_links,
                   "links held at once (the oldest link that joined nothing yields to a new one)")
        ->capture_default_str();
    app.add_option("--idle-timeout", o.node.idle_timeout_s,
                   "seconds a link may stay without joining a group before it is closed")
        ->capture_default_str();
    app.add_option("--max-bad-per-s", o.node.max_bad_per_s,
                   "malformed, forged or unexpected packets per second that close a link")
        ->capture_default_str();
    auto* ticket = app.add_subcommand("ticket", "print a job's LOOM_INC_TICKET for this node key");
    ticket->add_option("--key-file", o.key_file, "the node key file")->required();
    ticket->add_option("--job", o.ticket_job, "the job's name (the ticket's JOB)")->required();
    ticket->callback([&o] { o.ticket = true; });
}

status check_address(const std::string& address, const std::string& what) {
    std::string_view a = address;
    if (a.starts_with("shm:") && a.size() > 4) {
        return status::ok();
    }
    if (a.starts_with("ofi:") || a.starts_with("dpdk:")) {
        return status::ok();  // the provider or port is checked when the node opens it
    }
    net::host_port where;
    if (a.starts_with("tcp:") && net::parse_host_port(a.substr(4), &where, 0) == nullptr) {
        return status::ok();
    }
    return invalid_argument(what + " '" + address +
                            "': expected tcp:HOST:PORT (PORT 0..65535), shm:NAME, "
                            "ofi:PROVIDER[/ADDRESS] or dpdk:memif:NAME / dpdk:af_packet:IFACE");
}

void note_given(const CLI::App& app, options& o) {
    o.job_quota_given  = app.count("--job-quota") > 0;
    o.job_memory_given = app.count("--job-memory") > 0;
}

status check_ready_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path folder = fs::path(path).parent_path();
    if (folder.empty()) {
        folder = ".";
    }
    if (!fs::is_directory(folder, ec)) {
        return invalid_argument("--ready-file " + path + ": no folder " + folder.string());
    }
    if (fs::is_directory(path, ec)) {
        return invalid_argument("--ready-file " + path + " is a folder");
    }
    if (access(folder.c_str(), W_OK | X_OK) != 0) {
        return invalid_argument("--ready-file " + path + ": folder " + folder.string() +
                                " is not writable");
    }
    return status::ok();
}

std::string mib_text(double mib) {
    char text[32];
    std::snprintf(text, sizeof text, "%g MiB", mib);
    return text;
}

// A per-job limit above the node's could never be reached: refused when given, lowered to
// the node's when it is the default.
status check_limits(options& o) {
    if (o.node.job_quota > o.node.slots) {
        if (o.job_quota_given) {
            return invalid_argument("--job-quota " + std::to_string(o.node.job_quota) +
                                    " is larger than --slots " + std::to_string(o.node.slots) +
                                    " (a job's slots come out of the node's pool)");
        }
        o.node.job_quota = o.node.slots;
    }
    if (o.job_memory_mib > o.max_memory_mib) {
        if (o.job_memory_given) {
            return invalid_argument("--job-memory " + mib_text(o.job_memory_mib) +
                                    " is larger than --max-memory " + mib_text(o.max_memory_mib) +
                                    " (a job's memory comes out of the node's)");
        }
        o.job_memory_mib = o.max_memory_mib;
    }
    return status::ok();
}

status check_options(options& o) {
    if (o.ticket) {
        return o.ticket_job.empty() ? invalid_argument("ticket: --job must not be empty")
                                    : status::ok();
    }
    if (!o.stats_address.empty()) {
        return check_address(o.stats_address, "--stats");
    }
    if (o.node.listen.empty()) {
        return invalid_argument("--listen ADDR is required (or --stats ADDR)");
    }
    if (status st = check_address(o.node.listen, "--listen"); !st) {
        return st;
    }
    if (!o.node.parent.empty()) {
        if (status st = check_address(o.node.parent, "--parent"); !st) {
            return st;
        }
    }
    if (o.node.slots < 1 || o.node.job_quota < 1) {
        return invalid_argument("--slots and --job-quota must be at least 1");
    }
    auto probability = [](double p) { return p >= 0 && p <= 1; };
    if (!probability(o.node.drop) || !probability(o.node.dup) || o.node.drop + o.node.dup > 1) {
        return invalid_argument("--drop and --dup are probabilities (0..1) summing to at most 1");
    }
    if (o.key_file.empty() && !o.node.insecure) {
        return invalid_argument(
            "--key-file FILE is required (joins prove their job's ticket; a missing FILE is "
            "created), or --insecure to admit any join on a loopback or shm listener");
    }
    if (!o.key_file.empty() && o.node.insecure) {
        return invalid_argument("--key-file and --insecure exclude each other");
    }
    if (!(o.max_memory_mib > 0) || !(o.job_memory_mib > 0) || o.node.max_members < 1 ||
        o.node.max_links < 1 || !(o.node.idle_timeout_s > 0) || o.node.max_bad_per_s < 1) {
        return invalid_argument(
            "--max-memory, --job-memory, --max-members, --max-links, --idle-timeout and "
            "--max-bad-per-s must be positive");
    }
    if (!(o.stats_interval_s >= 0)) {
        return invalid_argument("--stats-interval must be >= 0 seconds");
    }
    if (!o.ready_file.empty()) {
        if (status st = check_ready_file(o.ready_file); !st) {
            return st;
        }
    }
    return check_limits(o);
}

}  // namespace loom::switch_tool
