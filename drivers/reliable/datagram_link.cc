// SPDX-License-Identifier: Apache-2.0
// The frame_link over a datagram endpoint (datagram_link.hh) and the shm full mesh the tests
// and tools build from it. A frame is gathered into one buffer sized at construction (the
// datagram endpoint takes one contiguous frame), so the fast path allocates nothing.
#include "drivers/reliable/datagram_link.hh"

#include <time.h>

#include <cstring>
#include <string>

#include "base/check.hh"
#include "base/clock.hh"
#include "drivers/common/peer_set.hh"

namespace loom::drivers::reliable {
namespace {

class datagram_link final : public common::frame_link {
  public:
    explicit datagram_link(std::unique_ptr<datagram_endpoint> ep)
        : ep_(std::move(ep)), frame_(new uint8_t[datagram_max_frame]) {}

    size_t mtu() const override { return datagram_max_frame; }
    bool send(const void* head, size_t hlen, const void* body, size_t blen) override {
        if (hlen + blen > datagram_max_frame) {
            return false;
        }
        std::memcpy(frame_.get(), head, hlen);
        if (blen > 0) {
            std::memcpy(frame_.get() + hlen, body, blen);
        }
        uint64_t dropped = ep_->stats().send_dropped;
        ep_->send(frame_.get(), hlen + blen);
        return ep_->stats().send_dropped == dropped;  // a full way: the caller retries
    }
    int recv(common::frame_view* out, int max) override {
        const uint8_t* f = nullptr;
        size_t len       = 0;
        if (max < 1 || !ep_->recv(&f, &len)) {
            return 0;
        }
        out[0] = common::frame_view{f, len};
        return 1;  // the endpoint keeps one frame valid at a time
    }
    bool alive() const override { return ep_->alive(); }
    std::string describe() const override { return ep_->describe(); }

  private:
    std::unique_ptr<datagram_endpoint> ep_;
    std::unique_ptr<uint8_t[]> frame_;
};

std::string pair_name(const std::string& job, int low, int high) {
    return job + ".rl." + std::to_string(low) + "." + std::to_string(high);
}

}  // namespace

std::unique_ptr<common::frame_link> datagram_frame_link(std::unique_ptr<datagram_endpoint> ep) {
    return std::make_unique<datagram_link>(std::move(ep));
}

result<std::vector<std::unique_ptr<common::frame_link>>> shm_mesh(const endpoint_config& config,
                                                                  const link_faults& faults) {
    int me = config.rank;
    LOOM_ASSIGN(std::vector<int> peers, common::peer_set(config, "rel:shm"));
    std::vector<bool> is_peer(size_t(config.size), false);
    for (int r : peers) {
        is_peer[size_t(r)] = true;
    }
    std::vector<std::unique_ptr<datagram_endpoint>> eps(size_t(config.size));
    std::vector<std::unique_ptr<datagram_listener>> listeners(size_t(config.size));
    // Listen first (never blocks), then connect down, then accept up: every rank's connects
    // reach lower ranks, which get to accepting once their own connects are done.
    for (int r = me + 1; r < config.size; ++r) {
        if (is_peer[size_t(r)]) {
            LOOM_ASSIGN(listeners[size_t(r)],
                        listen_datagram("shm:" + pair_name(config.job, me, r)));
        }
    }
    deadline until(config.timeout_s);
    for (int r = 0; r < me; ++r) {
        if (is_peer[size_t(r)]) {
            auto ep = connect_datagram("shm:" + pair_name(config.job, r, me),
                                       std::max(until.remaining_s(), 0.001));
            if (!ep) {
                return status(ep.error())
                    .prefix("rank " + std::to_string(me) + ": link to rank " + std::to_string(r) +
                            ": ");
            }
            eps[size_t(r)] = std::move(ep).value();
        }
    }
    for (;;) {
        bool all = true;
        for (int r = me + 1; r < config.size; ++r) {
            if (listeners[size_t(r)] != nullptr && eps[size_t(r)] == nullptr) {
                eps[size_t(r)] = listeners[size_t(r)]->accept();
                all            = all && eps[size_t(r)] != nullptr;
            }
        }
        if (all) {
            break;
        }
        if (until.expired()) {
            std::string missing;
            for (int r = me + 1; r < config.size; ++r) {
                if (listeners[size_t(r)] != nullptr && eps[size_t(r)] == nullptr) {
                    missing += " " + std::to_string(r);
                }
            }
            return status(LOOM_ERR_TIMEOUT, "rank " + std::to_string(me) + ": no link from ranks" +
                                                missing + " within " +
                                                std::to_string(config.timeout_s) + " s");
        }
        timespec ts{0, 200000};
        ::nanosleep(&ts, nullptr);
    }
    bool lossy = faults.drop > 0 || faults.dup > 0 || faults.reorder > 0;
    std::vector<std::unique_ptr<common::frame_link>> links(size_t(config.size));
    for (int r = 0; r < config.size; ++r) {
        if (eps[size_t(r)] != nullptr) {
            auto ep = std::move(eps[size_t(r)]);
            if (lossy) {
                ep = lossy_datagram(std::move(ep), faults.drop, faults.dup, faults.reorder,
                                    faults.seed * 1000003 + uint64_t(me) * 131 + uint64_t(r));
            }
            links[size_t(r)] = datagram_frame_link(std::move(ep));
        }
    }
    return links;
}

}  // namespace loom::drivers::reliable
