// SPDX-License-Identifier: Apache-2.0
// Who may join an aggregation node: the node key, a job's ticket, and the join's proof.
//
// A node has a secret key (loom-switch --key-file). A job's ticket is
//   ticket = HMAC-SHA-256(node key, "loom-inc-job:" + job id)
// where the job id is the 64-bit id the ranks put in every packet (job_id_of the job's
// whole name: jobs whose names share a prefix, such as exp.sweep and exp.stuff, are
// different jobs with quotas of their own). Whoever holds the ticket may join that job's groups,
// and only that job's: the node derives the ticket from the job id in the join's header and checks
// the join's MAC with it. Ranks get it as LOOM_INC_TICKET="JOB:HEX" (loomrun --switch sets it; an
// operator prints one with `loom-switch ticket --key-file F --job JOB`); JOB also becomes the job
// id of the ranks' groups, so the ticket names the node's job and its quota.
//
// Replay: on accept the node sends every link a fresh nonce (packet_kind::challenge); the
// join's MAC covers that nonce and the join's header fields and request, so a join seen on
// one link proves nothing on another, and the node key never leaves the node.
//
// Nodes of one aggregation tree share the key: a child node proves its own join to its
// parent with the same ticket, derived from the shared key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/hash.hh"
#include "base/secret.hh"

namespace loom::inc {

constexpr size_t nonce_bytes = 16;  // the challenge's payload
constexpr size_t mac_bytes   = 32;  // HMAC-SHA-256 after the join request
constexpr size_t key_bytes   = 32;  // a node key (64 hex digits in its file)

/// The 64-bit job id of a job name, every byte of it (FNV-1a): the id in every packet of
/// the job. 0 is the node's own (challenges, statistics), never a job's.
inline uint64_t job_id_of(std::string_view job_name) {
    uint64_t id = fnv1a64(job_name);
    return id != 0 ? id : golden_gamma;
}

/// The ticket of job `job` under a node key.
inline digest256 job_ticket(std::span<const uint8_t> node_key, uint64_t job) {
    std::string msg = "loom-inc-job:" + std::to_string(job);
    return hmac_sha256(node_key,
                       std::span(reinterpret_cast<const uint8_t*>(msg.data()), msg.size()));
}

/// LOOM_INC_TICKET's form, "JOB:HEX", for a job name under a node key.
inline std::string ticket_text(std::span<const uint8_t> node_key, std::string_view job_name) {
    return std::string(job_name) + ":" + to_hex(job_ticket(node_key, job_id_of(job_name)));
}

/// Splits "JOB:HEX" into the job name and the ticket's bytes; false when malformed (no
/// colon, an empty name, or not 64 hex digits after the last colon).
inline bool parse_ticket(std::string_view text, std::string* job_name, std::string* ticket) {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
        return false;
    }
    std::string bytes;
    if (!from_hex(text.substr(colon + 1), &bytes) || bytes.size() != mac_bytes) {
        return false;
    }
    *job_name = std::string(text.substr(0, colon));
    *ticket   = std::move(bytes);
    return true;
}

}  // namespace loom::inc
