// SPDX-License-Identifier: Apache-2.0
// loom-ctld's flags (options.hh).
#include "options.hh"

namespace loom::ctld {

void add_options(CLI::App& app, options& o) {
    app.add_option("--listen", o.listen,
                   "HOST:PORT to serve the API on (port 0: any free one, printed on the first "
                   "line); loopback unless told otherwise")
        ->capture_default_str();
    app.add_option("--token-file", o.token_file,
                   "file holding the bearer token every request must carry (mode 0600, at "
                   "least 16 characters)")
        ->required();
    app.add_option("--state", o.state_file,
                   "file the member table and the slot allocations are kept in (written "
                   "atomically at every change, read back at start); none: memory only, a "
                   "restart forgets every member and allocation");
    app.add_option("--heartbeat", o.heartbeat_s,
                   "heartbeat period in seconds given to members; three missed periods mark a "
                   "member down")
        ->capture_default_str();
    app.add_option("--max-body", o.max_body_bytes, "largest request body in bytes (larger: 413)")
        ->capture_default_str();
    app.add_option("--rate", o.rate_per_s,
                   "requests per second one client address may make (429 "
                   "above; 0: no limit)")
        ->capture_default_str();
    app.add_option("--max-members", o.max_members, "members the table holds at most (503 above)")
        ->capture_default_str();
    app.add_option("--slot-quota", o.slot_quota,
                   "in-network slots one job may hold in all, summed over the nodes of all its "
                   "allocations (a grant over it is refused, naming the quota); 0: no quota")
        ->capture_default_str();
    app.add_option("--threads", o.threads, "threads serving requests")->capture_default_str();
    app.add_option("--fabric", o.fabric,
                   "the fabric the controller holds, a shape (torus:4x4) or a fabric file: it "
                   "serves its routes, route tables and aggregation trees (/v1/fabric, "
                   "/v1/routes, /v1/trees) without the members that are down or drained; none: "
                   "those paths answer 404");
    app.add_option("--ties", o.ties_name,
                   "dimension-ordered routing's antipode tie rule on a lattice: toward-plus or "
                   "source-parity")
        ->capture_default_str();
}

status check_options(options& o) {
    if (const char* why = net::parse_host_port(o.listen, &o.where, 0)) {
        return invalid_argument("--listen '" + o.listen + "' " + why +
                                " (expected HOST:PORT, PORT 0..65535)");
    }
    if (!(o.heartbeat_s >= 0.01 && o.heartbeat_s <= 3600)) {
        return invalid_argument("--heartbeat must be between 0.01 and 3600 seconds");
    }
    if (o.max_body_bytes < 256 || o.max_body_bytes > (size_t{64} << 20)) {
        return invalid_argument("--max-body must be between 256 bytes and 64 MiB");
    }
    if (!(o.rate_per_s >= 0)) {
        return invalid_argument("--rate must be >= 0 requests per second");
    }
    if (!routing::parse_tie_rule(o.ties_name, &o.ties)) {
        return invalid_argument("--ties must be toward-plus or source-parity, not '" + o.ties_name +
                                "'");
    }
    if (o.max_members < 1 || o.threads < 1 || o.threads > 256) {
        return invalid_argument("--max-members must be at least 1 and --threads 1..256");
    }
    return status::ok();
}

}  // namespace loom::ctld
