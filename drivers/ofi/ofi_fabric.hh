// SPDX-License-Identifier: Apache-2.0
// What the ofi driver's endpoints (the reliable tagged one and the datagram one) share: the
// provider choice, the fabric, domain, address vector, completion queue and endpoint of
// libfabric opened and closed together, the endpoint's address as text, and error text.
//
// Provider. LOOM_OFI_PROVIDER names one (tcp;ofi_rxm, shm, udp;ofi_rxd, net, ...); a name
// libfabric does not offer for the endpoint type and capabilities is an error that lists
// the ones it does, never a silent fallback. Unset, the best available is taken: hardware
// providers first (cxi, efa, verbs;ofi_rxm, psm3), then the network ones over sockets
// (tcp;ofi_rxm, net, udp;ofi_rxd, sockets), shm last (it reaches one host only).
//
// Address. A network provider binds to LOOM_OFI_ADDR, else to the IPv4 address of
// LOOM_OFI_IFACE, else where it chooses itself: under network namespaces each rank names
// its own. The address peers insert is fi_getname's, as hex (kv_store values are text).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.hh"

namespace loom::drivers::ofi {

/// libfabric's text for a return code (negative or positive), with the code.
std::string error_text(int rc);

/// fi_close() of any fid type, for unique_ptr.
template <class T>
struct fid_closer {
    void operator()(T* p) const {
        if (p != nullptr) {
            fi_close(&p->fid);
        }
    }
};
template <class T>
using fid_ptr = std::unique_ptr<T, fid_closer<T>>;

/// What an endpoint asks of the fabric.
struct fabric_request {
    fi_ep_type ep_type = FI_EP_RDM;
    uint64_t caps      = FI_TAGGED;  // required
    uint64_t wanted    = 0;          // taken where the provider offers them (FI_RMA | FI_READ ...)
    size_t cq_size     = 1024;
    size_t av_size     = 64;
    size_t tx_size     = 0;  // 0: the provider's default
    size_t rx_size     = 0;
    int rank           = 0;      // for messages (-1: none, as for a datagram endpoint)
    const char* what   = "ofi";  // for messages: "ofi", "ofi datagram"
    /// The provider to open, where the caller was told one (an ofi: datagram address names
    /// it); "" takes requested_provider().
    std::string provider;
};

/// The provider's name to ask for: LOOM_OFI_PROVIDER, or "" for the best available.
std::string requested_provider();

/// ofi_rxm's bounce buffer size where loom sets it (FI_OFI_RXM_BUFFER_SIZE unset), and
/// libfabric 1.17's own otherwise.
constexpr size_t rxm_default_buffer   = 65536;
constexpr size_t rxm_libfabric_buffer = 16384;
/// ofi_rxm's receive buffers per connection where loom sets the buffer size (libfabric: 128).
constexpr size_t rxm_default_msg_rx = 32;
/// The ofi_rxm bounce buffer size in effect (FI_OFI_RXM_BUFFER_SIZE, as set before libfabric
/// loads its providers), so the eager limit can follow it.
size_t rxm_buffer_bytes();

/// The providers libfabric offers for `request` (names as fi_info -l prints them, each once,
/// in libfabric's order).
std::vector<std::string> available_providers(const fabric_request& request);

/// Where a network provider binds (LOOM_OFI_ADDR, LOOM_OFI_IFACE's address), or "" for the
/// provider's own choice.
result<std::string> bind_node(int rank);

/// One opened set of fabric, domain, address vector, completion queue and enabled endpoint.
/// Destruction closes them in the order libfabric needs (endpoint first).
class fabric {
  public:
    static result<std::unique_ptr<fabric>> open(const fabric_request& request);
    fabric(const fabric&)            = delete;
    fabric& operator=(const fabric&) = delete;
    ~fabric();

    const fi_info* info() const { return info_; }
    fid_domain* domain() const { return domain_.get(); }
    fid_ep* ep() const { return ep_.get(); }
    fid_cq* cq() const { return cq_.get(); }
    fid_av* av() const { return av_.get(); }
    fid_fabric* fabric_fid() const { return fabric_.get(); }

    /// "tcp;ofi_rxm" and the like.
    std::string provider() const;
    std::string fabric_name() const;
    std::string domain_name() const;
    /// The capabilities granted, of those this file asks about, as "tagged+rma+read".
    std::string caps_text() const;
    /// The domain's memory-registration mode, as "virt_addr+prov_key" ("none" for 0).
    std::string mr_mode_text() const;
    bool has(uint64_t cap) const { return (info_->caps & cap) == cap; }
    /// The provider wants local buffers registered (FI_MR_LOCAL): descriptors on every call.
    bool needs_local_mr() const { return (info_->domain_attr->mr_mode & FI_MR_LOCAL) != 0; }
    /// Remote addresses of RMA are virtual addresses (else offsets into the region).
    bool virt_addr() const { return (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0; }
    /// A memory region is bound to the endpoint and enabled before use (FI_MR_ENDPOINT).
    bool mr_endpoint() const { return (info_->domain_attr->mr_mode & FI_MR_ENDPOINT) != 0; }
    bool shared_memory() const { return provider() == "shm"; }

    /// This endpoint's address (fi_getname) as hex.
    const std::string& address() const { return address_; }
    /// Inserts a peer's address (hex, as address() gives it) into the address vector.
    result<fi_addr_t> insert(const std::string& hex, int peer_rank);

    /// The completion queue's wait descriptor (FI_WAIT_FD), or -1 where the provider offers
    /// none. Before sleeping on it, try_wait() must say yes.
    int wait_fd() const { return wait_fd_; }
    /// fi_trywait on the completion queue: true when sleeping on wait_fd() loses nothing.
    bool try_wait() const;
    /// A wait descriptor that turns readable when, and only when, there is work: net's
    /// turns readable with nothing to report, so it is not slept on.
    bool wakes_reliably() const { return wait_fd_ >= 0 && provider() != "net"; }

  private:
    fabric() = default;
    status open_objects(const fabric_request& request);

    fi_info* info_ = nullptr;
    // Closed in reverse: endpoint, completion queue, address vector, domain, fabric.
    fid_ptr<fid_fabric> fabric_;
    fid_ptr<fid_domain> domain_;
    fid_ptr<fid_av> av_;
    fid_ptr<fid_cq> cq_;
    fid_ptr<fid_ep> ep_;
    int wait_fd_ = -1;
    std::string address_;
};

}  // namespace loom::drivers::ofi
