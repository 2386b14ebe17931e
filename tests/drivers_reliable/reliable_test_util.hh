// SPDX-License-Identifier: Apache-2.0
// Helpers for the reliable protocol's tests with real processes: open a rank's reliable
// endpoint over a shm datagram mesh (drivers/reliable/datagram_link.hh), optionally with the
// fault injector on its sends and a hostile wrapper that slips bad frames in beside the good
// ones; wait for completions with a deadline.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "driver_test_util.hh"
#include "drivers/reliable/datagram_link.hh"
#include "drivers/reliable/reliable.hh"
#include "drivers/reliable/reliable_wire.hh"

namespace loom::test {

namespace rel = drivers::reliable;

/// Which bad frame a hostile link sends beside every `every`-th good one.
enum class hostile { none, wrong_key, bad_checksum, truncated, unknown_rank };

/// A frame_link that sends every frame, and beside every `every`-th a spoiled copy: another
/// job's key (checksum made right, so only the key gives it away), a flipped bit, a cut
/// frame, or a source rank that is not in the job.
class hostile_link final : public drivers::common::frame_link {
  public:
    hostile_link(std::unique_ptr<drivers::common::frame_link> inner, hostile kind, int every)
        : inner_(std::move(inner)), kind_(kind), every_(every) {}
    size_t mtu() const override { return inner_->mtu(); }
    bool send(const void* head, size_t hlen, const void* body, size_t blen) override {
        if (!inner_->send(head, hlen, body, blen)) {
            return false;
        }
        if (kind_ != hostile::none && ++count_ % every_ == 0 && hlen == rel::header_bytes) {
            uint8_t h[rel::header_bytes];
            std::memcpy(h, head, hlen);
            uint32_t body_crc = rel::crc32c(0, body, blen);
            size_t send_blen  = blen;
            switch (kind_) {
                case hostile::wrong_key:
                    h[20] ^= 0x5a;
                    rel::seal(h, body_crc);
                    break;
                case hostile::bad_checksum:
                    h[44] ^= 0x01;  // a SACK bit: without the checksum it would ack a frame
                    break;
                case hostile::truncated:
                    if (blen == 0) {
                        return inner_->send(h, 40, nullptr, 0) || true;
                    }
                    send_blen = blen - 1;
                    break;
                case hostile::unknown_rank:
                    loom::be::put32(h + 8, 1000);
                    rel::seal(h, body_crc);
                    break;
                case hostile::none:
                    break;
            }
            ++spoiled_;
            (void)inner_->send(h, hlen, body, send_blen);
        }
        return true;
    }
    void flush() override { inner_->flush(); }
    int recv(drivers::common::frame_view* out, int max) override { return inner_->recv(out, max); }
    bool alive() const override { return inner_->alive(); }
    std::string describe() const override { return inner_->describe() + " (hostile)"; }

  private:
    std::unique_ptr<drivers::common::frame_link> inner_;
    hostile kind_;
    int every_;
    uint64_t count_   = 0;
    uint64_t spoiled_ = 0;
};

struct rel_setup {
    rel::link_faults faults;
    hostile bad   = hostile::none;
    int bad_every = 7;
    rel::options opts;
};

/// Rank `rank`'s reliable endpoint of a `size`-rank job over a shm mesh, connected.
inline result<std::unique_ptr<drivers::endpoint>> open_rel(int rank, int size,
                                                           const std::string& job, kv_store* store,
                                                           const rel_setup& s) {
    drivers::endpoint_config cfg = config_of(rank, size, job, store, 20);
    auto links                   = rel::shm_mesh(cfg, s.faults);
    if (!links) {
        return links.error();
    }
    // Only the links to other ranks, in rank order; link_of maps a rank to its link.
    std::vector<std::unique_ptr<drivers::common::frame_link>> mine;
    std::vector<int> link_of(size_t(size), -1);
    for (int r = 0; r < size; ++r) {
        auto& l = (*links)[size_t(r)];
        if (l == nullptr) {
            continue;
        }
        if (s.bad != hostile::none) {
            l = std::make_unique<hostile_link>(std::move(l), s.bad, s.bad_every);
        }
        link_of[size_t(r)] = int(mine.size());
        mine.push_back(std::move(l));
    }
    return connected(rel::open_reliable(cfg, std::move(mine), link_of, s.opts));
}

/// Polls until `want` completions came or `timeout_s` passed; how many came.
inline int wait_n(const drivers::fast_path& fp, std::vector<drivers::completion>* out, int want,
                  double timeout_s) {
    out->resize(size_t(want));
    return wait_completions(fp, out->data(), want, timeout_s);
}

}  // namespace loom::test
