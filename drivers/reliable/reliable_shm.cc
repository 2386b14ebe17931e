// SPDX-License-Identifier: Apache-2.0
// "rel:shm": the reliable protocol over a full mesh of shm datagram links, under a registry
// name, so the driver contract tests (and loom-bench, for a look at the protocol's cost) run
// it like any driver. The links need the peers, which connect() has and open() does not, so
// the endpoint here builds the mesh and the reliable endpoint in connect() and hands the fast
// path through. Not a transport for production: same-host shared memory has its own driver.
#include <memory>
#include <string>
#include <vector>

#include "base/check.hh"
#include "drivers/registry_internal.hh"
#include "drivers/reliable/datagram_link.hh"
#include "drivers/reliable/reliable.hh"

namespace loom::drivers {
namespace {

class reliable_shm final : public endpoint {
  public:
    reliable_shm(const endpoint_config& config, const reliable::options& opts)
        : config_(config), opts_(opts) {}

    caps capabilities() const override {
        if (inner_ != nullptr) {
            return inner_->capabilities();
        }
        caps c;
        c.name               = opts_.name.c_str();
        c.single_copy        = true;
        c.eager_limit        = opts_.eager_limit;
        c.max_message        = size_t{1} << 40;
        c.detects_peer_death = true;
        c.carrier            = medium::network;
        return c;
    }
    status connect() override {
        if (inner_ != nullptr) {
            return status::ok();
        }
        LOOM_ASSIGN(auto links, reliable::shm_mesh(config_, reliable::link_faults{}));
        std::vector<std::unique_ptr<common::frame_link>> mine;
        std::vector<int> link_of(size_t(config_.size), -1);
        for (int r = 0; r < config_.size; ++r) {
            if (links[size_t(r)] != nullptr) {
                link_of[size_t(r)] = int(mine.size());
                mine.push_back(std::move(links[size_t(r)]));
            }
        }
        LOOM_ASSIGN(auto ep, reliable::open_reliable(config_, std::move(mine), link_of, opts_));
        LOOM_CHECK(ep->connect());
        inner_ = std::move(ep);
        return status::ok();
    }
    const fast_path& fast() const override {
        static const fast_path none{};
        return inner_ != nullptr ? inner_->fast() : none;
    }
    void close() override {
        if (inner_ != nullptr) {
            inner_->close();
        }
    }

  private:
    endpoint_config config_;
    reliable::options opts_;
    std::unique_ptr<endpoint> inner_;
};

}  // namespace

result<std::unique_ptr<endpoint>> open_reliable_shm(const endpoint_config& config) {
    LOOM_ASSIGN(reliable::options opts, reliable::options_from_params());
    opts.name = "rel:shm";
    return std::unique_ptr<endpoint>(std::make_unique<reliable_shm>(config, opts));
}

}  // namespace loom::drivers
