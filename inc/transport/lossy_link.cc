// lossy_link: the fault driver's loss, duplication and reordering applied to a real link, so
// the client's retransmission and the aggregator's duplicate handling run against the same
// faults over tcp and shm as in the simulated network.
//
// Each send draws from its own splitmix64 stream (one seed gives one fault pattern, whatever
// the platform's <random>): dropped packets are not sent, duplicated ones are sent twice, and
// a reordered one waits in a one-packet buffer until the next packet has gone (or the next
// recv(), so a lone packet is late, never lost). Only sends are disturbed; recv, alive,
// describe and stats are the inner link's.
#include <cstring>
#include <memory>

#include "base/hash.hh"
#include "inc/transport/link.hh"

namespace loom::inc {
namespace {

constexpr size_t max_packet = header_bytes + max_payload_bytes;

class lossy final : public link {
  public:
    lossy(std::unique_ptr<link> inner, double drop, double dup, double reorder, uint64_t seed)
        : inner_(std::move(inner)),
          drop_(drop),
          dup_(dup),
          reorder_(reorder),
          rng_(seed),
          held_(new uint8_t[max_packet]) {}
    ~lossy() override = default;

    void send(const uint8_t* packet, size_t len) override {
        // Three draws every time, so one fault does not shift the pattern of the next.
        bool drop = draw() < drop_, dup = draw() < dup_, reorder = draw() < reorder_;
        if (drop) {
            return;
        }
        int copies = dup ? 2 : 1;
        if (reorder && held_copies_ == 0 && len <= max_packet) {
            std::memcpy(held_.get(), packet, len);
            held_len_    = len;
            held_copies_ = copies;
            return;
        }
        for (int i = 0; i < copies; ++i) {
            inner_->send(packet, len);
        }
        release_held();
    }
    bool recv(const uint8_t** packet, size_t* len) override {
        release_held();
        return inner_->recv(packet, len);
    }
    bool alive() const override { return inner_->alive(); }
    std::string describe() const override { return inner_->describe() + " (lossy)"; }
    const link_stats& stats() const override { return inner_->stats(); }

  private:
    double draw() { return rng_.uniform(); }
    void release_held() {
        for (; held_copies_ > 0; --held_copies_) {
            inner_->send(held_.get(), held_len_);
        }
    }

    std::unique_ptr<link> inner_;
    double drop_, dup_, reorder_;
    splitmix_stream rng_;
    std::unique_ptr<uint8_t[]> held_;  // the packet held back by a reorder
    size_t held_len_ = 0;
    int held_copies_ = 0;
};

}  // namespace

std::unique_ptr<link> lossy_link(std::unique_ptr<link> inner, double drop, double dup,
                                 double reorder, uint64_t seed) {
    return std::make_unique<lossy>(std::move(inner), drop, dup, reorder, seed);
}

}  // namespace loom::inc
