// SPDX-License-Identifier: Apache-2.0
// shm's datagram endpoint (drivers/datagram.hh): per connection, one memfd segment holding
// two single-producer/single-consumer rings of frame slots (client → node, node → client).
// "Client" is the side that connects, "node" the side that listens.
//
// Data path: send() copies into the next free slot or drops (counted) when the ring is full;
// recv() hands out the next slot in place and frees it on the following recv() call. Neither
// makes a syscall; an idle recv() probes the socket at most once a millisecond.
// The hand-shake that sets a segment up is shm_datagram_setup.cc.
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "drivers/shm/shm_datagram.hh"  // the ring's memory orders: base/spsc_ring.hh

namespace loom::drivers::shm::dgram {
namespace {

constexpr int64_t probe_interval_ns = 1'000'000;  // an idle endpoint checks its peer every 1 ms

int64_t coarse_now_ns() {
    // CLOCK_MONOTONIC_COARSE is read from the vDSO without a syscall; ms resolution suffices.
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class shm_datagram final : public datagram_endpoint {
  public:
    /// `to_peer` / `from_peer`: ring indices 0 (client → node) or 1 (node → client).
    shm_datagram(int sock, void* segment, int to_peer, std::string address)
        : sock_(sock), segment_(segment), address_(std::move(address)) {
        char* rings = static_cast<char*>(segment) + cache_line;
        out_        = ring_spsc_producer(
                   ring_spsc_view::at(rings + size_t(to_peer) * ring_bytes(), ring_slots, slot_bytes));
        in_ = ring_spsc_consumer(
            ring_spsc_view::at(rings + size_t(1 - to_peer) * ring_bytes(), ring_slots, slot_bytes));
    }
    ~shm_datagram() override {
        ::munmap(segment_, segment_bytes());
        if (sock_ >= 0) {
            ::close(sock_);
        }
    }

    void send(const uint8_t* packet, size_t len) override {
        char* slot = alive_ && len <= max_packet ? out_.try_reserve() : nullptr;
        if (slot == nullptr) {
            ++stats_.send_dropped;  // full ring, dead peer or oversized packet
            return;
        }
        auto n = uint32_t(len);
        std::memcpy(slot, &n, sizeof n);
        std::memcpy(slot + sizeof n, packet, len);
        out_.publish();  // release: the slot's bytes before the new head (ring R1)
        ++stats_.sent;
        stats_.bytes_sent += len;
    }

    bool recv(const uint8_t** packet, size_t* len) override {
        if (holding_) {
            in_.release();  // the caller is done with the last packet (ring R2)
            holding_ = false;
        }
        for (;;) {
            const char* slot = in_.peek();  // acquire: the head, then the slot (ring A1)
            if (slot == nullptr) {
                idle();
                return false;
            }
            uint32_t n = 0;
            std::memcpy(&n, slot, sizeof n);
            if (n > max_packet) {
                ++stats_.bad_frames;  // a corrupt slot: skip it, the rest may be fine
                in_.release();
                continue;
            }
            *packet  = reinterpret_cast<const uint8_t*>(slot + sizeof n);
            *len     = n;
            holding_ = true;
            ++stats_.received;
            stats_.bytes_received += n;
            return true;
        }
    }

    bool alive() const override { return alive_; }
    std::string describe() const override {
        return address_ + (alive_ ? " (fd " + std::to_string(sock_) + ")" : " (closed)");
    }
    const datagram_stats& stats() const override { return stats_; }

  private:
    /// Liveness off the hot path: at most one non-blocking recv on the socket per interval.
    void idle() {
        if (!alive_) {
            return;
        }
        int64_t now = coarse_now_ns();
        if (now - last_probe_ns_ < probe_interval_ns) {
            return;
        }
        last_probe_ns_ = now;
        char byte      = 0;
        ssize_t r      = ::recv(sock_, &byte, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            alive_ = false;  // the peer closed its socket or died (the kernel closed it)
        }
    }

    int sock_;
    void* segment_;
    std::string address_;
    ring_spsc_producer out_;
    ring_spsc_consumer in_;
    bool holding_          = false;  // the last recv()'s slot is still the caller's
    bool alive_            = true;
    int64_t last_probe_ns_ = 0;
    datagram_stats stats_;
};

}  // namespace

std::unique_ptr<datagram_endpoint> ring_endpoint(int sock, void* segment, int to_peer,
                                                 std::string address) {
    return std::make_unique<shm_datagram>(sock, segment, to_peer, std::move(address));
}

}  // namespace loom::drivers::shm::dgram
