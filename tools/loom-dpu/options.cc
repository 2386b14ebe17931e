// SPDX-License-Identifier: Apache-2.0
// loom-dpu options (options.hh).
#include "options.hh"

#include <fstream>

namespace loom::dpu {

void add_options(CLI::App& app, options& o) {
    app.add_option("--node", o.node, "this DPU's node: a rank of --fabric's shape")->required();
    app.add_option("--fabric", o.fabric,
                   "the DPUs' wiring: torus:AxBxC, ring:N or mesh:AxB (one DPU per node); "
                   "required unless --stats");
    app.add_option("--dir", o.dir,
                   "directory of the job's memif sockets (h<rank>.sock host ports, "
                   "l<low>-<high>-<dim>.sock torus links) and ready files (node-<n>.ready)")
        ->required();
    app.add_option("--ranks-per-node", o.ranks_per_node,
                   "ranks on each node: host ports per DPU; the node of rank r is "
                   "r / ranks-per-node (default 1)");
    app.add_option("--secret-file", o.secret_file,
                   "file whose first line is the job's memif secret (at most 24 characters): "
                   "only the job's ranks and DPUs can attach to the ports");
    app.add_flag("--busy-poll", o.busy_poll,
                 "spin when idle, as on a real DPU's own cores (default: spin a little, then "
                 "sleep on the ports' rx interrupts where they have them, else in short "
                 "sleeps, so ranks on the same cores run)");
    app.add_option("--link-timeout", o.link_timeout_s,
                   "seconds a neighbour DPU's server socket may take to appear (default 30)");
    app.add_option("--queue", o.queue_slots,
                   "frames per (output port, VC) queue, a power of two 32..4096 (default 256)");
    app.add_flag("--stats", o.stats_query,
                 "ask the running loom-dpu of --node in --dir to print its statistics on its "
                 "stderr (SIGUSR1 to the pid in its ready file), then exit");
    app.add_flag("--aggregate", o.aggregate,
                 "also be an in-network aggregation node on the same poll loop: a leaf for this "
                 "node's ranks (dpdk:memif:NAME-a<node>, NAME from --dir's last part), and on "
                 "node 0 the root (NAME-root) that every leaf joins; needs --key-file");
    app.add_option("--key-file", o.key_file,
                   "--aggregate: the node key, 64 hex digits in a 0600 file (joins must prove the "
                   "job's ticket, LOOM_INC_TICKET)");
    app.add_option("--slots", o.slots,
                   "--aggregate: aggregation slots of each node instance (default 1024)");
    app.add_option("--drop", o.drop,
                   "--aggregate: probability that a received data packet is dropped (loss "
                   "injection, as loom-switch --drop; default 0)");
    app.add_option("--dup", o.dup,
                   "--aggregate: probability that a received data packet is handled twice "
                   "(default 0)");
    app.add_option("--seed", o.seed, "--aggregate: seed of the loss injection (default 1)");
    app.add_option("--agg-ids", o.agg_ids,
                   "--aggregate: memif interfaces the leaf offers, one per rank's link "
                   "(1..64, default 4)");
}

result<topology::shape> check_options(options& o) {
    auto s = topology::shape::parse(o.fabric);
    if (!s) {
        return invalid_argument("--fabric '" + o.fabric + "': " + s.error().message());
    }
    if (!s->is_lattice()) {
        return invalid_argument("--fabric '" + o.fabric +
                                "': the DPUs are wired as a lattice (torus, ring or mesh)");
    }
    if (o.node < 0 || o.node >= s->size()) {
        return invalid_argument("--node " + std::to_string(o.node) + ": not a node of " + o.fabric +
                                " (0.." + std::to_string(s->size() - 1) + ")");
    }
    if (o.ranks_per_node < 1 || o.ranks_per_node > 64) {
        return invalid_argument("--ranks-per-node " + std::to_string(o.ranks_per_node) +
                                ": expected 1..64");
    }
    if (o.queue_slots < 32 || o.queue_slots > 4096 || (o.queue_slots & (o.queue_slots - 1))) {
        return invalid_argument("--queue " + std::to_string(o.queue_slots) +
                                ": expected a power of two in 32..4096");
    }
    if (!(o.link_timeout_s > 0)) {
        return invalid_argument("--link-timeout: expected a positive number of seconds");
    }
    if (o.aggregate) {
        if (o.key_file.empty()) {
            return invalid_argument("--aggregate needs --key-file (the node key)");
        }
        if (!(o.drop >= 0 && o.dup >= 0 && o.drop + o.dup <= 1)) {
            return invalid_argument("--drop and --dup: probabilities summing to at most 1");
        }
        if (o.agg_ids < 1 || o.agg_ids > 64 || s->size() > 64) {
            return invalid_argument(
                "--agg-ids: expected 1..64 (and at most 64 nodes, the root's memif ids)");
        }
        if (o.slots < 1) {
            return invalid_argument("--slots: expected at least 1");
        }
    }
    if (!o.secret_file.empty()) {
        std::ifstream in(o.secret_file);
        if (!in || !std::getline(in, o.secret)) {
            return invalid_argument("--secret-file " + o.secret_file + ": cannot read it");
        }
        if (o.secret.size() > 24) {
            return invalid_argument("--secret-file " + o.secret_file +
                                    ": a memif secret has at most 24 characters");
        }
    }
    return *s;
}

std::string host_socket(const std::string& dir, int rank) {
    return dir + "/h" + std::to_string(rank) + ".sock";
}

std::string link_socket(const std::string& dir, int low_node, int high_node, int dim) {
    return dir + "/l" + std::to_string(low_node) + "-" + std::to_string(high_node) + "-" +
           std::to_string(dim) + ".sock";
}

std::string ready_file(const std::string& dir, int node) {
    return dir + "/node-" + std::to_string(node) + ".ready";
}

}  // namespace loom::dpu
