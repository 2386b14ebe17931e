// SPDX-License-Identifier: Apache-2.0
// loom_comm_split: an allgather of (color, key) over the parent, then a child communicator
// per color with its own endpoint and engine (comm.hh says why not the parent's endpoint).
//
// Naming: the n-th split of a communicator (n counts splits, which every rank makes in the
// same order, like any collective) gives color c the job "<parent job>.s<n>c<c>". That job
// names the child's shared resources (shm segments) and prefixes every key the child's
// driver publishes in the parent's rendezvous store, so children of different splits and
// colors never meet each other's addresses.
#include <algorithm>
#include <numeric>

#include "base/check.hh"
#include "base/wire_tag.hh"
#include "comm/comm.hh"

namespace loom::comm {
namespace {

// The parent's store seen through a key prefix (the child's job), so a child's driver
// can publish "its" rank-0 address without colliding with the parent's rank 0.
class prefixed_store final : public kv_store {
  public:
    prefixed_store(std::shared_ptr<kv_store> inner, std::string prefix)
        : inner_(std::move(inner)), prefix_(std::move(prefix)) {}

    status set(std::string_view key, std::string_view value) override {
        return inner_->set(prefix_ + std::string(key), value);
    }
    result<std::string> get(std::string_view key, double timeout_s) override {
        return inner_->get(prefix_ + std::string(key), timeout_s);
    }
    status wait(const std::vector<std::string>& keys, double timeout_s) override {
        std::vector<std::string> full;
        full.reserve(keys.size());
        for (const auto& k : keys) {
            full.push_back(prefix_ + k);
        }
        return inner_->wait(full, timeout_s);
    }

  private:
    std::shared_ptr<kv_store> inner_;
    std::string prefix_;
};

}  // namespace

status communicator::exchange_colors(int color, int key, std::vector<int>* all) {
    // Two int32 per rank: block r of a 2N-element allgather is exactly rank r's pair.
    int32_t mine[2] = {color, key};
    std::vector<int32_t> gathered(2 * static_cast<size_t>(size()));
    loom_coll_attr_t attr{};
    attr.struct_size = sizeof attr;
    attr.algorithm   = "ring";  // fixed: LOOM_ALGO's allgather choice need not fit here
    call_args a;
    a.kind       = call_kind::allgather;
    a.sendbuf    = mine;
    a.recvbuf    = gathered.data();
    a.count      = gathered.size();
    a.dtype      = LOOM_INT32;
    a.attr       = &attr;
    uint32_t seq = 0;
    auto r       = start(a, nullptr, &seq);
    if (!r) {
        return status(r.error()).prefix("split: ");
    }
    loom_status_t code = engine_->wait(*r, -1);
    status result      = code == LOOM_SUCCESS
                             ? status::ok()
                             : status(code, "split: " + engine_->failure_of(*r).message);
    engine_->release(*r);
    all->assign(gathered.begin(), gathered.end());
    return result;
}

status communicator::split(int color, int key, std::unique_ptr<communicator>* out) {
    out->reset();
    if (color < LOOM_UNDEFINED) {
        return invalid_argument("split on rank " + std::to_string(rank()) + ": color " +
                                std::to_string(color) + " is negative (LOOM_UNDEFINED: none)");
    }
    if (aborted_.load(std::memory_order_acquire)) {
        return status(LOOM_ERR_PEER_FAILURE,
                      "split on rank " + std::to_string(rank()) + ": the communicator was aborted");
    }
    std::vector<int> all;
    LOOM_CHECK(exchange_colors(color, key, &all));
    uint32_t number = splits_++;
    if (color == LOOM_UNDEFINED) {
        return status::ok();
    }
    std::vector<int> members;  // parent ranks of my color, in child rank order
    for (int r = 0; r < size(); ++r) {
        if (all[2 * r] == color) {
            members.push_back(r);
        }
    }
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
    settings s = settings_;
    s.rank = static_cast<int>(std::find(members.begin(), members.end(), rank()) - members.begin());
    s.size = static_cast<int>(members.size());
    s.job  = settings_.job + ".s" + std::to_string(number) + "c" + std::to_string(color);
    s.topo = topology::shape::star(s.size);
    s.comm_id = wire::wrap_comm_id(uint64_t{settings_.comm_id} + 1 + number);
    if (s.size == 1) {
        s.transport = "self";  // a child of one rank talks to nobody
    } else if (drivers::caps c = endpoint_->capabilities(); c.forwards) {
        // The child's ranks are no lattice of LOOM_FABRIC: it connects them directly over
        // the inner driver (forwarding within a child is not done yet).
        s.transport = c.direct;
    }
    auto store = std::make_shared<prefixed_store>(store_, s.job + "/");
    auto child = create(std::move(s), std::move(store));
    if (!child) {
        return status(child.error()).prefix("split (color " + std::to_string(color) + "): ");
    }
    *out = std::move(child).value();
    return status::ok();
}

}  // namespace loom::comm
