// SPDX-License-Identifier: Apache-2.0
// The fault wrapper of a datagram endpoint (fault.hh): the injector's decisions applied to
// frames, so a protocol's retransmission and duplicate handling run against the same faults
// over tcp and shm as in a simulated network. Only sends are disturbed.
#include <cstring>
#include <memory>

#include "drivers/fault/fault.hh"
#include "drivers/fault_dice.hh"

namespace loom::drivers::fault {
namespace {

class fault_datagram final : public datagram_endpoint {
  public:
    fault_datagram(std::unique_ptr<datagram_endpoint> inner, const dice& d)
        : inner_(std::move(inner)), dice_(d), held_(new uint8_t[datagram_max_frame]) {}

    void send(const uint8_t* frame, size_t len) override {
        // Three draws every time, so one fault does not shift the pattern of the next.
        bool drop = dice_.drop(), dup = dice_.duplicate(), reorder = dice_.reorder();
        if (drop) {
            return;
        }
        int copies = dup ? 2 : 1;
        if (reorder && held_copies_ == 0 && len <= datagram_max_frame) {
            std::memcpy(held_.get(), frame, len);
            held_len_    = len;
            held_copies_ = copies;
            return;
        }
        for (int i = 0; i < copies; ++i) {
            inner_->send(frame, len);
        }
        release_held();
    }
    bool recv(const uint8_t** frame, size_t* len) override {
        release_held();
        return inner_->recv(frame, len);
    }
    bool alive() const override { return inner_->alive(); }
    std::string describe() const override { return inner_->describe() + " (lossy)"; }
    const datagram_stats& stats() const override { return inner_->stats(); }
    // A frame held back by a reorder goes out on the next pass's recv(), before any sleep.
    waker idle_waker() override { return inner_->idle_waker(); }

  private:
    void release_held() {
        for (; held_copies_ > 0; --held_copies_) {
            inner_->send(held_.get(), held_len_);
        }
    }

    std::unique_ptr<datagram_endpoint> inner_;
    dice dice_;
    std::unique_ptr<uint8_t[]> held_;  // the frame held back by a reorder
    size_t held_len_ = 0;
    int held_copies_ = 0;
};

}  // namespace
}  // namespace loom::drivers::fault

namespace loom::drivers {

std::unique_ptr<datagram_endpoint> lossy_datagram(std::unique_ptr<datagram_endpoint> inner,
                                                  double drop, double dup, double reorder,
                                                  uint64_t seed) {
    return std::make_unique<fault::fault_datagram>(std::move(inner),
                                                   fault::dice(drop, dup, reorder, seed));
}

}  // namespace loom::drivers
