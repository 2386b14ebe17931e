// SPDX-License-Identifier: Apache-2.0
// The TCP rendezvous' challenge-response (store_tcp.hh has the exchange). Both tags are
// HMAC-SHA-256 under the job's secret over the server's fresh nonce, so a recorded hello is
// worth nothing on another connection, and each side proves that it holds the secret
// without sending it.
#include <algorithm>

#include "base/check.hh"
#include "base/secret.hh"
#include "bootstrap/store_tcp.hh"

namespace loom::bootstrap::detail {
namespace {

std::string as_string(const digest256& d) {
    return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

std::span<const uint8_t> bytes_of(std::string_view s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

result<std::string> job_key(const identity& me, const std::string& where) {
    if (me.secret.empty()) {
        return invalid_argument(
            "bootstrap: rank " + std::to_string(me.rank) + ": the TCP rendezvous " + where +
            " needs LOOM_JOB_SECRET (64 hex digits, the same on every rank of the job) so that "
            "only the job's ranks can use it; loomrun sets one per launch, otherwise e.g. "
            "export LOOM_JOB_SECRET=$(openssl rand -hex 32) before starting the ranks");
    }
    LOOM_CHECK(check_secret(me.secret));
    std::string key;
    from_hex(me.secret, &key);
    return key;
}

result<std::string> fresh_nonce() {
    std::string nonce(nonce_bytes, '\0');
    LOOM_CHECK(random_bytes(reinterpret_cast<uint8_t*>(nonce.data()), nonce.size()));
    return nonce;
}

std::string hello_fields(int rank, int size, std::string_view job, std::string_view client_nonce) {
    frame_writer w;
    w.u8(uint8_t(wire_op::hello))
        .u32(uint32_t(rank))
        .u32(uint32_t(size))
        .str(job)
        .str(client_nonce);
    return w.finish().substr(4);  // the body without its length
}

std::string hello_tag(std::string_view key, std::string_view server_nonce,
                      std::string_view fields) {
    std::string msg = "loom-bootstrap client\n";
    msg.append(server_nonce).append(fields);
    return as_string(hmac_sha256(key, msg));
}

std::string server_tag(std::string_view key, std::string_view server_nonce,
                       std::string_view client_nonce) {
    std::string msg = "loom-bootstrap server\n";
    msg.append(server_nonce).append(client_nonce);
    return as_string(hmac_sha256(key, msg));
}

bool tags_equal(std::string_view a, std::string_view b) {
    return equal_constant_time(bytes_of(a), bytes_of(b));
}

}  // namespace loom::bootstrap::detail
