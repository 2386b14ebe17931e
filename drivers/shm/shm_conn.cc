// SPDX-License-Identifier: Apache-2.0
// shm endpoint lifecycle: open (reclaim, create own segment), connect (publish, attach,
// probe CMA, barrier), close.
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/check.hh"
#include "base/log.hh"
#include "base/net.hh"
#include "drivers/registry_internal.hh"
#include "drivers/shm/shm.hh"

namespace loom::drivers::shm {
namespace {

std::string address_key(const std::string& job, int rank) {
    return "shm/" + job + "/" + std::to_string(rank);
}

// A pidfd turns "is the peer alive" into a poll() that also sees a zombie as exited and
// cannot be fooled by pid reuse; -1 where the kernel has none (then kill(pid, 0)).
int open_pidfd(pid_t pid) {
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

}  // namespace

shm_endpoint::shm_endpoint(const endpoint_config& config, const shm_params& p, segment own)
    : config_(config),
      params_(p),
      own_(std::move(own)),
      peers_(new peer_state[size_t(config.size)]),
      loop_(config.rank, p.max_ops) {
    match_.open(p.max_ops);
    for (size_t i = 0; i < match_.size(); ++i) {
        match_.at(i)->index = static_cast<uint32_t>(i);
    }
    fast_ = fast_path_of(this);
}

shm_endpoint::~shm_endpoint() {
    close();
}

caps shm_endpoint::capabilities() const {
    caps c;
    c.name               = "shm";
    c.single_copy        = connected_ ? single_copy_ : params_.cma_allowed;
    c.eager_limit        = params_.slot_bytes - sizeof(slot_header);
    c.max_message        = SIZE_MAX;
    c.detects_peer_death = true;
    c.carrier            = medium::shared_memory;
    return c;
}

status shm_endpoint::connect() {
    if (closed_) {
        return invalid_argument("shm connect: rank " + std::to_string(config_.rank) +
                                ": endpoint is closed");
    }
    if (connected_) {
        return status::ok();
    }
    deadline until(config_.timeout_s);
    std::vector<int> peers;
    for (int p = 0; p < config_.size; ++p) {
        bool listed = config_.peers.empty() || std::find(config_.peers.begin(), config_.peers.end(),
                                                         p) != config_.peers.end();
        if (listed && p != config_.rank) {
            peers.push_back(p);
        }
    }
    if (!peers.empty() && config_.store == nullptr) {
        return invalid_argument("shm connect: rank " + std::to_string(config_.rank) +
                                ": a store is needed to reach other ranks");
    }
    single_copy_ = params_.cma_allowed;
    if (!peers.empty()) {
        char value[512];
        std::snprintf(value, sizeof(value), "%d %s %" PRIxPTR, int(::getpid()), own_.name().c_str(),
                      reinterpret_cast<uintptr_t>(own_.header()));
        LOOM_CHECK(config_.store->set(address_key(config_.job, config_.rank), value));
    }
    for (size_t i = 0; i < peers.size(); ++i) {
        int p          = peers[i];
        auto published = config_.store->get(address_key(config_.job, p), until.remaining_s());
        if (!published) {
            // Every peer still missing, not only the first: a look without waiting.
            std::string missing;
            for (size_t j = i; j < peers.size(); ++j) {
                if (!config_.store->get(address_key(config_.job, peers[j]), 0)) {
                    missing += (missing.empty() ? "" : ",") + std::to_string(peers[j]);
                }
            }
            std::string who = missing.find(',') == std::string::npos ? "rank " : "ranks ";
            return status(published.error().code(),
                          "shm connect: rank " + std::to_string(config_.rank) +
                              " got no address within " + net::seconds_text(config_.timeout_s) +
                              " (" + who + missing + " missing): " + published.error().message());
        }
        LOOM_CHECK(attach_peer(peers_[p], *published));
        single_copy_ = single_copy_ && peers_[p].cma;
    }
    LOOM_CHECK(barrier(peers, until));
    connected_ = true;
    return status::ok();
}

status shm_endpoint::attach_peer(peer_state& ps, const std::string& published) {
    int rank = int(&ps - peers_.get());
    int pid  = 0;
    char name[256];
    uintptr_t probe = 0;
    if (std::sscanf(published.c_str(), "%d %255s %" SCNxPTR, &pid, name, &probe) != 3) {
        return internal_error("shm connect: rank " + std::to_string(config_.rank) +
                              ": malformed address '" + published + "' from rank " +
                              std::to_string(rank));
    }
    auto seg = segment::attach(name, pid, rank, config_.size);
    if (!seg) {
        return status(seg.error().code(), "shm connect: rank " + std::to_string(config_.rank) +
                                              " -> rank " + std::to_string(rank) + ": " +
                                              seg.error().message());
    }
    ps.seg                  = std::move(seg).value();
    ps.rank                 = rank;
    ps.pid                  = pid;
    ps.pidfd                = open_pidfd(pid);
    const segment_header* h = ps.seg.header();
    ps.out                  = ring_spsc_producer(ps.seg.ring_from(config_.rank));
    ps.in                   = ring_spsc_consumer(own_.ring_from(rank));
    ps.eager_limit          = h->slot_bytes - sizeof(slot_header);
    ps.remote_acks          = ps.seg.acks();
    ps.remote_max_ops       = h->max_ops;
    // Early arrivals come out of my ring, so my slot payload bounds them.
    size_t payload = params_.slot_bytes - sizeof(slot_header);
    ps.early_pool.init(params_.unexpected_per_peer);
    ps.early_data.reset(new char[payload * params_.unexpected_per_peer]);
    for (size_t i = 0; i < ps.early_pool.size(); ++i) {
        ps.early_pool[i].data = ps.early_data.get() + i * payload;
    }
    ps.out_chan  = own_.channel_to(rank);
    ps.out_data  = own_.channel_data(rank);
    ps.out_bytes = params_.bounce_bytes;
    ps.in_chan   = ps.seg.channel_to(config_.rank);
    ps.in_data   = ps.seg.channel_data(config_.rank);
    ps.in_bytes  = h->bounce_bytes;
    probe_cma(ps, probe);
    ps.connected = true;
    active_.push_back(&ps);
    return status::ok();
}

// Reads the peer's segment magic from its address space: if process_vm_readv works here,
// large messages from this peer take the single-copy path.
void shm_endpoint::probe_cma(peer_state& ps, uint64_t probe_addr) {
    ps.cma = false;
    if (!params_.cma_allowed) {
        return;
    }
    uint64_t word = 0;
    iovec local{&word, sizeof(word)};
    iovec remote{reinterpret_cast<void*>(probe_addr), sizeof(word)};
    ssize_t n = ::process_vm_readv(ps.pid, &local, 1, &remote, 1, 0);
    ps.cma    = n == ssize_t(sizeof(word)) && word == segment_magic;
    if (!ps.cma) {
        LOOM_LOG_INFO(log::subsystem::net,
                      "shm: rank %d: process_vm_readv from rank %d (pid %d) not permitted (%s); "
                      "large messages use the bounce buffer",
                      config_.rank, ps.rank, int(ps.pid), n < 0 ? std::strerror(errno) : "short");
    }
}

// Every peer has mapped my segment once it says so: after this, unlinking it at close
// cannot strand a slow peer.
status shm_endpoint::barrier(const std::vector<int>& peers, const deadline& until) {
    if (peers.empty()) {
        return status::ok();
    }
    LOOM_CHECK(config_.store->set(address_key(config_.job, config_.rank) + "/attached", "1"));
    for (int p : peers) {
        auto got =
            config_.store->get(address_key(config_.job, p) + "/attached", until.remaining_s());
        if (!got) {
            return status(got.error().code(),
                          "shm connect: rank " + std::to_string(config_.rank) + ": rank " +
                              std::to_string(p) + " did not finish attaching within " +
                              std::to_string(config_.timeout_s) + " s: " + got.error().message());
        }
    }
    return status::ok();
}

void shm_endpoint::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    fail_all(LOOM_ERR_PEER_FAILURE);
    loop_.fail_all(LOOM_ERR_PEER_FAILURE);
    if (own_.mapped()) {
        // Peers waiting on us see this in their liveness check (A7 in peer_gone()).
        own_.header()->state.store(state_closed, std::memory_order_release);  // R7
    }
    own_.unlink();
    for (peer_state* ps : active_) {
        if (ps->pidfd >= 0) {
            ::close(ps->pidfd);
            ps->pidfd = -1;
        }
        ps->connected = false;
        ps->seg.unmap();
    }
    active_.clear();
    own_.unmap();
}

}  // namespace loom::drivers::shm

namespace loom::drivers {

result<std::unique_ptr<endpoint>> open_shm(const endpoint_config& config) {
    if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
        return invalid_argument("shm driver: rank " + std::to_string(config.rank) +
                                " is outside a job of " + std::to_string(config.size) + " ranks");
    }
    LOOM_ASSIGN(shm::shm_params p, shm::read_params());
    shm::reclaim_dead_segments();
    std::string name = shm::segment_name(config.job, config.rank, ::getpid());
    auto seg         = shm::segment::create(name, p, config.rank, config.size);
    if (!seg) {
        return status(seg.error().code(), "shm driver: rank " + std::to_string(config.rank) + ": " +
                                              seg.error().message());
    }
    return std::unique_ptr<endpoint>(new shm::shm_endpoint(config, p, std::move(seg).value()));
}

}  // namespace loom::drivers
