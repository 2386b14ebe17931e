// SPDX-License-Identifier: Apache-2.0
// Which transport, rendezvous and job id the ranks get, and who chose each: the user's
// LOOM_* settings win over loomrun's defaults, and a setting that cannot work with the flags
// given is refused with the reason, never silently replaced.
#include <string_view>

#include "base/check.hh"
#include "loomrun.hh"

namespace loom::loomrun {
namespace {

constexpr const char* default_source = "loomrun default";
constexpr const char* ranks_choose_source =
    "left to the ranks: LOOM_TRANSPORT unset, ranks on several hosts";

const std::string* find(const user_settings& user, const char* name) {
    auto it = user.find(name);
    return it == user.end() ? nullptr : &it->second;
}

// The driver under any fault: wrappers ("fault:fault:tcp" → "tcp").
std::string_view innermost(std::string_view transport) {
    while (transport.starts_with("fault:")) {
        transport.remove_prefix(6);
    }
    return transport;
}

status check_transport(const options& o, const std::string& transport, const std::string& from) {
    std::string said =
        from == "--transport" ? "--transport " + transport : "LOOM_TRANSPORT=" + transport;
    std::string_view inner = innermost(transport);
    if (inner.starts_with("fwd:")) {
        if (!o.fabric.empty()) {
            return invalid_argument(said +
                                    " with --fabric: loomrun wraps the transport in fwd: "
                                    "itself; name the driver under it (shm or tcp)");
        }
        inner = innermost(inner.substr(4));
    }
    if (!known_transport(inner)) {
        return invalid_argument(said + ": unknown transport (allowed: " + known_transports +
                                " with -n 1, fault:<transport>, fwd:<transport> with "
                                "LOOM_FABRIC)");
    }
    if (inner == "self" && o.ranks != 1) {
        return invalid_argument(said + " connects a rank only to itself, but -n is " +
                                std::to_string(o.ranks) + " (use shm or tcp, or -n 1)");
    }
    return status::ok();
}

// A variable a flag sets for every rank: the user's value must agree or be absent.
status check_flag_owns(const user_settings& user, const char* name, const std::string& flag,
                       const std::string& value = "") {
    const std::string* given = find(user, name);
    if (given == nullptr || (!value.empty() && *given == value)) {
        return status::ok();
    }
    return invalid_argument(std::string(name) + "=" + *given + " conflicts with " + flag +
                            ", which sets it for every rank" +
                            (value.empty() ? "" : " (to " + value + ")") + "; unset one of them");
}

}  // namespace

bool known_transport(std::string_view driver) {
    return driver == "shm" || driver == "tcp" || driver == "ofi" || driver == "verbs" ||
           driver == "dpdk" || driver == "dpu" || driver == "self";
}

result<rank_settings> resolve_rank_settings(const options& o, const user_settings& user) {
    rank_settings s;
    const std::string* env_transport = find(user, "LOOM_TRANSPORT");
    if (!o.transport.empty()) {
        if (env_transport != nullptr && *env_transport != o.transport) {
            return invalid_argument("--transport " + o.transport + " but LOOM_TRANSPORT=" +
                                    *env_transport + ": give the transport once");
        }
        s.transport      = o.transport;
        s.transport_from = "--transport";
    } else if (env_transport != nullptr && !env_transport->empty()) {
        s.transport      = *env_transport;
        s.transport_from = "LOOM_TRANSPORT";
    } else if (o.hosts == "netns" && o.fabric.empty()) {
        // Namespaces stand for hosts, which share no memory: the ranks see that they are on
        // several hosts and pick a network transport themselves (LOOM_TRANSPORT unset), as
        // ranks that mpirun or srun start across real hosts do.
        s.transport_from = ranks_choose_source;
    } else {
        // Under --fabric the driver below fwd: is named here.
        s.transport      = o.hosts == "netns" ? "tcp" : "shm";
        s.transport_from = default_source;
    }
    if (!s.transport.empty()) {
        LOOM_CHECK(check_transport(o, s.transport, s.transport_from));
    }

    const std::string* env_bootstrap = find(user, "LOOM_BOOTSTRAP");
    if (env_bootstrap != nullptr && !env_bootstrap->empty()) {
        if (o.hosts == "netns") {
            return invalid_argument("LOOM_BOOTSTRAP=" + *env_bootstrap +
                                    " with --hosts netns: the ranks' namespaces reach only "
                                    "rank 0's namespace address, which loomrun picks; unset "
                                    "LOOM_BOOTSTRAP");
        }
        s.bootstrap      = *env_bootstrap;
        s.bootstrap_from = "LOOM_BOOTSTRAP";
    } else {
        s.bootstrap_from = default_source;
    }
    if (const std::string* secret = find(user, "LOOM_JOB_SECRET"); secret != nullptr) {
        s.secret = *secret;  // authenticates loomrun's rendezvous as well as a fresh one
    }
    for (const char* name : {"LOOM_TCP_ADDR", "LOOM_OFI_ADDR"}) {
        if (const std::string* addr = find(user, name); addr != nullptr && o.hosts == "netns") {
            return invalid_argument(std::string(name) + "=" + *addr +
                                    " with --hosts netns: each rank gets its namespace's own "
                                    "address; unset " +
                                    name);
        }
    }
    if (const std::string* job = find(user, "LOOM_JOB"); job != nullptr && !job->empty()) {
        s.job      = *job;
        s.job_from = "LOOM_JOB";
    } else {
        s.job_from = default_source;
    }
    if (!o.fabric.empty()) {
        LOOM_CHECK(check_flag_owns(user, "LOOM_FABRIC", "--fabric " + o.fabric, o.fabric));
        LOOM_CHECK(check_flag_owns(user, "LOOM_PROGRESS",
                                   "--fabric (messages are forwarded "
                                   "by each rank's progress thread)",
                                   "thread"));
    }
    if (o.link_stats) {
        LOOM_CHECK(check_flag_owns(user, "LOOM_LINK_STATS_DIR", "--link-stats"));
    }
    if (o.with_switch) {
        for (const char* name : {"LOOM_SWITCH", "LOOM_SWITCH_FABRIC", "LOOM_INC_TICKET"}) {
            LOOM_CHECK(check_flag_owns(user, name, "--switch"));
        }
    }
    return s;
}

}  // namespace loom::loomrun
