// SPDX-License-Identifier: Apache-2.0
// The self endpoint: a single-rank communicator (or a rank connected only to itself) over
// the loopback matcher. Nothing to connect, no store needed.
#include <memory>
#include <string>

#include "drivers/common/loopback.hh"
#include "drivers/registry_internal.hh"

namespace loom::drivers {
namespace {

class self_endpoint final : public endpoint {
  public:
    self_endpoint(int rank, size_t max_ops) : rank_(rank), loop_(rank, max_ops) {
        fast_ = fast_path_of(this);
    }
    ~self_endpoint() override { close(); }

    caps capabilities() const override {
        caps c;
        c.name               = "self";
        c.single_copy        = true;  // send buffer -> receive buffer, nothing in between
        c.eager_limit        = 0;     // nothing is copied ahead of its receive
        c.max_message        = SIZE_MAX;
        c.detects_peer_death = false;  // there is no other process
        c.carrier            = medium::loopback;
        return c;
    }
    status connect() override { return status::ok(); }
    const fast_path& fast() const override { return fast_; }
    void close() override { loop_.fail_all(LOOM_ERR_PEER_FAILURE); }

    // The fast path: self only reaches its own rank.
    loom_status_t post_send(int peer, uint64_t tag, uint64_t imm, const void* buf, size_t len,
                            uint64_t cookie) {
        return peer == rank_ ? loop_.post_send(tag, imm, buf, len, cookie)
                             : LOOM_ERR_INVALID_ARGUMENT;
    }
    loom_status_t post_recv(int peer, uint64_t tag, uint64_t imm, void* buf, size_t len,
                            uint64_t cookie) {
        return peer == rank_ ? loop_.post_recv(tag, imm, buf, len, cookie)
                             : LOOM_ERR_INVALID_ARGUMENT;
    }
    int poll(completion* out, int max) { return loop_.poll(out, max); }
    bool pending() const { return loop_.pending(); }
    bool cancel(uint64_t cookie) { return loop_.cancel(cookie); }

  private:
    int rank_;
    common::loopback loop_;
    fast_path fast_{};
};

}  // namespace

result<std::unique_ptr<endpoint>> open_self(const endpoint_config& config) {
    bool only_self = config.peers.size() == 1 && config.peers[0] == config.rank;
    if (config.rank < 0 || (config.size != 1 && !only_self)) {
        return invalid_argument("self driver: rank " + std::to_string(config.rank) + " of " +
                                std::to_string(config.size) +
                                ": self connects a rank only to itself (size 1, or peers = "
                                "{rank}); use shm or tcp for other ranks");
    }
    return std::unique_ptr<endpoint>(new self_endpoint(config.rank, common::loopback_max_ops()));
}

}  // namespace loom::drivers
