// SPDX-License-Identifier: Apache-2.0
// ofi's datagram endpoint (drivers/datagram.hh, ofi_datagram.hh): the endpoint of one peer
// of a hub, the listener that hands them out, and the connect that says hello.
#include "drivers/ofi/ofi_datagram.hh"

#include <unistd.h>

#include "base/clock.hh"
#include "base/net.hh"
#include "base/secret.hh"

namespace loom::drivers::ofi {
namespace {

using dgram::hub;

constexpr double hello_interval_s = 0.05;  // a hello lost (udp) or refused (not up yet)
constexpr double goodbye_drain_s  = 0.2;   // how long a closing hub lets its goodbye leave

class ofi_datagram final : public datagram_endpoint {
  public:
    ofi_datagram(std::shared_ptr<hub> h, uint32_t peer) : h_(std::move(h)), peer_(peer) {}
    ~ofi_datagram() override {
        h_->close_peer(peer_);
        if (h_.use_count() == 1) {
            h_->drain_sends(goodbye_drain_s);  // the hub closes with this endpoint
        }
    }

    void send(const uint8_t* frame, size_t len) override {
        h_->send(peer_, dgram::kind::data, frame, len);
    }
    bool recv(const uint8_t** frame, size_t* len) override {
        h_->keep_alive(peer_);
        return h_->recv(peer_, frame, len);
    }
    bool alive() const override { return h_->alive(peer_); }
    std::string describe() const override {
        const auto& raw = h_->peer(peer_).raw;
        return "ofi:" + h_->provider() + "/" +
               to_hex({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}) + " (" +
               h_->endpoint_type() + " from " + h_->address() + (alive() ? ")" : ", closed)");
    }
    const datagram_stats& stats() const override { return h_->peer(peer_).stats; }
    waker idle_waker() override { return h_->can_wait() ? waker_of(this) : waker{}; }

    uint64_t arm_sleep() { return h_->arm_sleep(peer_); }
    void sleep(uint64_t token, int64_t timeout_ns) { h_->sleep(token, timeout_ns); }
    // No ring(): nothing beside the completion queue ends this sleep.

  private:
    std::shared_ptr<hub> h_;
    uint32_t peer_;
};

class ofi_datagram_listener final : public datagram_listener {
  public:
    explicit ofi_datagram_listener(std::shared_ptr<hub> h) : h_(std::move(h)) {}
    ~ofi_datagram_listener() override { h_->stop_accepting(); }

    std::unique_ptr<datagram_endpoint> accept() override {
        uint32_t peer = h_->next_unaccepted();
        return peer == UINT32_MAX ? nullptr : dgram::peer_endpoint(h_, peer);
    }
    std::string address() const override { return h_->address(); }
    uint64_t strangers() const override { return h_->strangers(); }

  private:
    std::shared_ptr<hub> h_;
};

}  // namespace

namespace dgram {
std::unique_ptr<datagram_endpoint> peer_endpoint(std::shared_ptr<hub> h, uint32_t peer) {
    return std::make_unique<ofi_datagram>(std::move(h), peer);
}
}  // namespace dgram

result<std::unique_ptr<datagram_endpoint>> connect_datagram(std::string_view rest,
                                                            double timeout_s) {
    std::string address = "ofi:" + std::string(rest);
    size_t slash        = rest.rfind('/');
    std::string raw;
    if (slash == std::string_view::npos || slash == 0 || !from_hex(rest.substr(slash + 1), &raw) ||
        raw.empty()) {
        return invalid_argument("'" + address +
                                "' is not ofi:PROVIDER/ADDRESS (the hex address a listener's "
                                "address() gives)");
    }
    auto opened = hub::open(rest.substr(0, slash), false);
    if (!opened) {
        return status(opened.error().code(), address + ": " + opened.error().message());
    }
    std::shared_ptr<hub> h = std::move(*opened);
    auto peer              = h->add_listener_peer(raw);
    if (!peer) {
        return status(peer.error().code(), address + ": " + peer.error().message());
    }
    deadline until(timeout_s);
    double next_hello = 0;
    int hellos        = 0;
    while (h->peer(*peer).number == 0) {
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT, "cannot connect to " + address + " within " +
                                                net::seconds_text(timeout_s) +
                                                ": no welcome after " + std::to_string(hellos) +
                                                " hello(s) from " + h->address());
        }
        if (now_s() >= next_hello) {
            h->send_hello(*peer);
            ++hellos;
            next_hello = now_s() + hello_interval_s;
        }
        h->progress();
        if (h->can_wait()) {
            h->sleep(0, 1'000'000);
        } else {
            ::usleep(200);
        }
    }
    h->peer(*peer).last_heard_s = now_s();
    return dgram::peer_endpoint(std::move(h), *peer);
}

result<std::unique_ptr<datagram_listener>> listen_datagram(std::string_view provider) {
    auto opened = hub::open(provider, true);
    if (!opened) {
        return status(opened.error().code(), "listening at ofi:" + std::string(provider) + ": " +
                                                 opened.error().message());
    }
    return std::unique_ptr<datagram_listener>(
        std::make_unique<ofi_datagram_listener>(std::move(*opened)));
}

}  // namespace loom::drivers::ofi
