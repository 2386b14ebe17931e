// SPDX-License-Identifier: Apache-2.0
// What a communicator is created with: loom_config_t fields, else the parameter registry
// (LOOM_*), else the defaults of loom.h. Invalid values are errors, never ignored.
#include <cstddef>
#include <string>

#include "base/check.hh"
#include "base/log.hh"
#include "base/params.hh"
#include "bootstrap/bootstrap.hh"
#include "comm/comm.hh"
#include "comm/comm_params.hh"
#include "comm/params_catalog.hh"
#include "inc/inc_params.hh"
#include "inc/node/ticket.hh"
#include "routing/routing_params.hh"
#include "tuner/tuner_params.hh"

namespace loom::comm {
namespace {

// Reads field `f` of the caller's config only when its struct_size includes it.
#define LOOM_CONFIG_HAS(cfg, f) \
    has_field((cfg)->struct_size, offsetof(loom_config_t, f) + sizeof((cfg)->f))

// A text field of the caller's config, or null when not given (or not in its struct).
#define LOOM_CONFIG_TEXT(cfg, f) ((cfg) && LOOM_CONFIG_HAS(cfg, f) ? (cfg)->f : nullptr)

std::string param_or(const char* given, const loom::params::string_param& param) {
    return given ? std::string(given) : param.get();
}

status resolve_identity(const loom_config_t* c, bootstrap::identity* id, std::string* address) {
    int rank = c && LOOM_CONFIG_HAS(c, rank) ? c->rank : -1;
    int size = c && LOOM_CONFIG_HAS(c, size) ? c->size : -1;
    if ((rank < 0) != (size < 0)) {
        return invalid_argument("loom_config_t: rank " + std::to_string(rank) + " and size " +
                                std::to_string(size) +
                                ": give both (>= 0, >= 1) or neither (-1: from the environment)");
    }
    if (size > bootstrap::max_ranks) {  // before anything is sized by it
        return invalid_argument("loom_config_t: size " + std::to_string(size) +
                                " exceeds the limit of " + std::to_string(bootstrap::max_ranks) +
                                " ranks per job");
    }
    const char* job  = LOOM_CONFIG_TEXT(c, job);
    const char* boot = LOOM_CONFIG_TEXT(c, bootstrap);
    bool from_env    = rank < 0;
    // The environment is consulted only for what the config does not give: a fully
    // specified config does not fail on unrelated launcher variables.
    bool need_env = from_env || (size > 1 && (!job || !boot));
    if (need_env) {
        LOOM_ASSIGN(*id, bootstrap::discover());
    }
    if (!from_env) {
        if (size < 1 || rank >= size) {
            return invalid_argument("loom_config_t: rank " + std::to_string(rank) +
                                    " is not in 0.." + std::to_string(size - 1));
        }
        // The environment's rendezvous only serves a job of the size it describes.
        if (need_env && id->size != size && !boot) {
            return invalid_argument("loom_config_t: size " + std::to_string(size) +
                                    " but the environment describes " + std::to_string(id->size) +
                                    " ranks: set loom_config_t.bootstrap (or LOOM_BOOTSTRAP)");
        }
        id->rank   = rank;
        id->size   = size;
        id->source = "config";
        if (!need_env) {
            LOOM_CHECK(bootstrap::read_store_settings(id));
        }
    }
    if (job) {
        id->job = job;
    }
    if (id->job.empty()) {
        id->job = "single";  // one rank from a config: names nothing shared
    }
    *address = boot ? std::string(boot) : id->bootstrap;
    return status::ok();
}

status resolve_numbers(const loom_config_t* c, settings* s) {
    double t = c && LOOM_CONFIG_HAS(c, timeout_s) && c->timeout_s > 0 ? c->timeout_s
                                                                      : params::timeout.get();
    if (!(t > 0)) {
        return invalid_argument("LOOM_TIMEOUT=" + std::to_string(t) + " s: must be positive");
    }
    s->timeout_s = t;
    int mode     = c && LOOM_CONFIG_HAS(c, progress) ? static_cast<int>(c->progress) : 0;
    if (mode < LOOM_PROGRESS_DEFAULT || mode > LOOM_PROGRESS_THREAD) {
        return invalid_argument("loom_config_t.progress " + std::to_string(mode) +
                                " is not a loom_progress_mode_t");
    }
    bool thread = mode == LOOM_PROGRESS_THREAD ||
                  (mode == LOOM_PROGRESS_DEFAULT && params::progress.get() == "thread");
    s->progress      = thread ? engine::progress_mode::thread : engine::progress_mode::caller;
    int64_t inflight = c && LOOM_CONFIG_HAS(c, max_inflight) && c->max_inflight > 0
                           ? c->max_inflight
                           : params::max_inflight.get();
    if (inflight < 1 || inflight > 4096) {
        return invalid_argument("max_inflight " + std::to_string(inflight) +
                                " (LOOM_MAX_INFLIGHT) must be 1..4096");
    }
    s->max_inflight = static_cast<int>(inflight);
    int64_t cache   = params::plan_cache.get();
    if (cache < 1 || cache > 1000000) {
        return invalid_argument("LOOM_PLAN_CACHE=" + std::to_string(cache) + " must be 1..1000000");
    }
    s->plan_cache = static_cast<int>(cache);
    return status::ok();
}

status resolve_shapes(const loom_config_t* c, settings* s) {
    std::string transport = param_or(LOOM_CONFIG_TEXT(c, transport), params::transport);
    // Unset with several ranks: shm until connect() has seen where the ranks are.
    s->transport      = !transport.empty() ? transport : s->size == 1 ? "self" : "shm";
    s->transport_auto = transport.empty() && s->size > 1;
    std::string topo  = param_or(LOOM_CONFIG_TEXT(c, topology), params::topology);
    if (topo.empty()) {
        // Over a fabric (LOOM_FABRIC) the communicator's topology is that fabric, so the
        // lattice algorithms (dims, dor-relay) apply and route as the forwarder does.
        topo = routing::params::fabric.get();
    }
    std::string ties = routing::params::route_ties.get();
    if (!routing::parse_tie_rule(ties, &s->ties)) {
        return invalid_argument("LOOM_ROUTE_TIES=" + ties + " (toward-plus or source-parity)");
    }
    if (topo.empty()) {
        s->topo = topology::shape::star(s->size);
    } else {
        LOOM_ASSIGN(s->topo, topology::shape::parse(topo));
        if (s->topo.size() != s->size) {
            return invalid_argument("topology " + topo + " has " + std::to_string(s->topo.size()) +
                                    " ranks, the communicator " + std::to_string(s->size));
        }
    }
    LOOM_ASSIGN(s->algos, algo_table::parse(params::algo.get()));
    s->calibration_file = tuner::params::calibration_file.get();
    s->calibrate_auto   = tuner::params::calibrate.get() == "auto";
    s->explain          = params::explain.get() != 0;
    if (!algorithms::parse_port_model(tuner::params::port_model.get(), &s->ports)) {
        return invalid_argument("LOOM_PORT_MODEL='" + tuner::params::port_model.get() +
                                "' (allowed: per-edge, single-port)");
    }
    s->switch_address = inc::params::switch_address.get();
    s->switch_fabric  = inc::params::switch_fabric.get();
    s->inc_ticket     = inc::params::ticket.get();
    if (std::string job, bytes;
        !s->inc_ticket.empty() && !inc::parse_ticket(s->inc_ticket, &job, &bytes)) {
        return invalid_argument(
            "LOOM_INC_TICKET must be JOB:HEX (64 hex digits), as `loom-switch ticket` prints");
    }
    int64_t slots = inc::params::slots.get();
    if (slots < 1 || slots > 4096) {
        return invalid_argument("LOOM_INC_SLOTS=" + std::to_string(slots) + " must be 1..4096");
    }
    s->inc_slots         = static_cast<int>(slots);
    s->inc_deterministic = inc::params::deterministic.get() != 0;
    for (auto [param, field] :
         {std::pair{&inc::params::drop, &s->inc_drop}, std::pair{&inc::params::dup, &s->inc_dup},
          std::pair{&inc::params::reorder, &s->inc_reorder}}) {
        *field = param->get();
        if (!(*field >= 0 && *field <= 1)) {
            return invalid_argument(std::string(param->name()) + "=" + std::to_string(*field) +
                                    ": a probability in [0, 1]");
        }
    }
    s->flat           = params::flat.get() != 0;
    s->flat_max_bytes = params::flat_max_bytes.get();
    if (s->flat_max_bytes < 8 || s->flat_max_bytes > (int64_t{1} << 20)) {
        return invalid_argument("LOOM_FLAT_MAX_BYTES=" + std::to_string(s->flat_max_bytes) +
                                " must be 8..1048576");
    }
    if (!s->switch_fabric.empty() && s->switch_address.find('=') == std::string::npos) {
        return invalid_argument(
            "LOOM_SWITCH_FABRIC is set: LOOM_SWITCH must name each switch's "
            "address as ID=ADDR,ID=ADDR");
    }
    return status::ok();
}

}  // namespace

status resolve_settings(const loom_config_t* c, settings* s, std::string* address,
                        bootstrap::identity* who) {
    warn_unknown_variables();
    LOOM_CHECK(loom::params::registry::global().load_status());
    if (c) {
        LOOM_CHECK(check_struct_size(c->struct_size, sizeof(loom_config_t), "loom_config_t"));
    }
    bootstrap::identity id;
    LOOM_CHECK(resolve_identity(c, &id, address));
    log::set_rank(id.rank);  // a world communicator's rank names this process's log lines
    s->rank           = id.rank;
    s->size           = id.size;
    s->job            = id.job;
    s->world_job      = id.job;
    s->join_timeout_s = id.timeout_s;
    *who              = id;
    LOOM_CHECK(resolve_numbers(c, s));
    return resolve_shapes(c, s);
}

const char* kind_name(call_kind k) {
    static const char* const names[] = {"broadcast",      "reduce",    "allreduce",
                                        "reduce_scatter", "allgather", "alltoall",
                                        "send",           "recv",      "barrier"};
    return names[static_cast<int>(k)];
}

schedule::collective primitive_of(call_kind k) {
    switch (k) {
        case call_kind::send:
        case call_kind::recv:
            return schedule::collective::sendrecv;
        case call_kind::barrier:
            return schedule::collective::allreduce;
        default:
            return static_cast<schedule::collective>(k);
    }
}

bool kind_reduces(call_kind k) {
    return k == call_kind::reduce || k == call_kind::allreduce || k == call_kind::reduce_scatter;
}

}  // namespace loom::comm
