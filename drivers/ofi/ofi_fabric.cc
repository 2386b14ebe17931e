// SPDX-License-Identifier: Apache-2.0
// The ofi driver's fabric: provider choice, fi_getinfo, the objects opened in order, the
// endpoint's address, error text.
#include "drivers/ofi/ofi_fabric.hh"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/check.hh"
#include "drivers/ofi/ofi_params.hh"

namespace loom::drivers::ofi {
namespace {

// Unset LOOM_OFI_PROVIDER: the first of these that libfabric offers. Hardware first; shm
// last, as it reaches the ranks of one host only.
constexpr const char* preference[] = {
    "cxi",         "efa", "verbs;ofi_rxm", "psm3",    "opx",
    "tcp;ofi_rxm", "net", "udp;ofi_rxd",   "sockets", "shm",
};

struct info_deleter {
    void operator()(fi_info* i) const { fi_freeinfo(i); }
};
using info_ptr = std::unique_ptr<fi_info, info_deleter>;

std::string who_of(const fabric_request& r) {
    return std::string(r.what) + (r.rank < 0 ? "" : ": rank " + std::to_string(r.rank)) + ": ";
}

// The hints every lookup of `request` starts from: endpoint type, capabilities, the
// registration modes loom handles, a completion queue loom polls.
info_ptr hints_for(const fabric_request& request, const std::string& provider) {
    info_ptr h(fi_allocinfo());
    if (!h) {
        return h;
    }
    h->ep_attr->type = request.ep_type;
    h->caps          = request.caps;
    h->mode          = FI_CONTEXT | FI_CONTEXT2;
    // The modes loom copes with: local descriptors, virtual or offset addresses, keys the
    // provider picks, regions bound to the endpoint, registering only allocated memory.
    h->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    h->domain_attr->threading        = FI_THREAD_DOMAIN;
    h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
    h->domain_attr->data_progress    = FI_PROGRESS_UNSPEC;
    if (!provider.empty()) {
        h->fabric_attr->prov_name = strdup(provider.c_str());
    }
    return h;
}

// udp;ofi_rxd sends up to FI_OFI_RXD_MAX_UNACKED datagrams to a peer before it hears an
// acknowledgement: 128 by default, several MiB of 64 KiB datagrams, where a UDP socket's
// default receive buffer holds about 208 KiB. A receiver descheduled for a moment (a loaded
// machine) drops the rest, and rxd retransmits on a timer that doubles with every retry:
// with 10,000 messages in flight two ranks completed about half in 40 s. A window of 16
// fits the buffer (the same run then completes every time). libfabric reads the variable
// once, when it first loads its providers, so it is set before loom's first fi_getinfo,
// and only where the user has not chosen a window.
// The rxm buffer libfabric uses: the user's, else loom's default where loom sets it, else
// libfabric's own (written once, by default_provider_settings()).
size_t rxm_buffer_in_effect = rxm_libfabric_buffer;

void default_provider_settings() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (!params::rxd_max_unacked.is_set()) {
            setenv(std::string(params::rxd_max_unacked.name()).c_str(), "16", 0);
        }
        // ofi_rxm sends a message of at most FI_OFI_RXM_BUFFER_SIZE eagerly (one trip), and
        // a larger one by segments or its own rendezvous: with its 16 KiB, loom's messages of
        // 16 KiB to 1 MiB took a rendezvous of three trips through kernel sockets (3-11x loom's
        // tcp driver; the 16-64 KiB all-reduce became 2-3x faster with 64 KiB, which loom's
        // eager limit then follows: ofi_endpoint.cc). Not for a provider named otherwise.
        std::string wanted = params::provider.get();
        std::string name(params::rxm_buffer_size.name());
        if (params::rxm_buffer_size.is_set()) {
            // Possibly set through loom's configuration: libfabric reads only the environment.
            setenv(name.c_str(), std::to_string(params::rxm_buffer_size.get()).c_str(), 0);
            if (params::rxm_buffer_size.get() > 0) {
                rxm_buffer_in_effect = size_t(params::rxm_buffer_size.get());
            }
        } else if (wanted.empty() || wanted == "tcp;ofi_rxm") {
            setenv(name.c_str(), std::to_string(rxm_default_buffer).c_str(), 0);
            rxm_buffer_in_effect = rxm_default_buffer;
            // rxm posts that many buffers per connection, and touches them: 4x the memory.
            if (!params::rxm_msg_rx_size.is_set()) {
                setenv(std::string(params::rxm_msg_rx_size.name()).c_str(),
                       std::to_string(rxm_default_msg_rx).c_str(), 0);
            }
        }
    });
}

// fi_getinfo for `request` from `provider` ("" any), bound to `node` ("" anywhere).
int get_info(const fabric_request& request, const std::string& provider, const std::string& node,
             uint64_t caps, info_ptr* out) {
    default_provider_settings();
    info_ptr h = hints_for(request, provider);
    if (!h) {
        return -FI_ENOMEM;
    }
    h->caps        = caps;
    fi_info* found = nullptr;
    int rc         = fi_getinfo(FI_VERSION(1, 17), node.empty() ? nullptr : node.c_str(), nullptr,
                        node.empty() ? 0 : FI_SOURCE, h.get(), &found);
    out->reset(found);
    return rc;
}

std::string join(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) {
        s += (s.empty() ? "" : ", ") + n;
    }
    return s.empty() ? "none" : s;
}

// The IPv4 address of `iface`; "" when it has none. `names` collects those that have one.
std::string interface_address(const std::string& iface, std::string* names) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) {
        return "";
    }
    std::string found;
    for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
        if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) {
            continue;
        }
        *names += (names->empty() ? "" : ", ") + std::string(it->ifa_name);
        if (iface == it->ifa_name && found.empty()) {
            char buf[INET_ADDRSTRLEN] = {};
            inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(it->ifa_addr)->sin_addr, buf,
                      sizeof buf);
            found = buf;
        }
    }
    freeifaddrs(list);
    return found;
}

bool network_provider(const std::string& provider) {
    return provider != "shm";
}

}  // namespace

std::string error_text(int rc) {
    int e = rc < 0 ? -rc : rc;
    return std::string(fi_strerror(e)) + " (" + std::to_string(-e) + ")";
}

size_t rxm_buffer_bytes() {
    default_provider_settings();
    return rxm_buffer_in_effect;
}

std::string requested_provider() {
    return params::provider.get();
}

std::vector<std::string> available_providers(const fabric_request& request) {
    info_ptr list;
    std::vector<std::string> names;
    if (get_info(request, "", "", request.caps, &list) != 0) {
        return names;
    }
    for (fi_info* i = list.get(); i != nullptr; i = i->next) {
        std::string n = i->fabric_attr->prov_name;
        if (std::find(names.begin(), names.end(), n) == names.end()) {
            names.push_back(n);
        }
    }
    return names;
}

result<std::string> bind_node(int rank) {
    std::string addr = params::addr.get();
    std::string ifc  = params::iface.get();
    if (!addr.empty()) {
        return addr;
    }
    if (ifc.empty()) {
        return std::string();
    }
    std::string names;
    std::string found = interface_address(ifc, &names);
    if (found.empty()) {
        return invalid_argument("ofi: rank " + std::to_string(rank) + ": LOOM_OFI_IFACE='" + ifc +
                                "' has no IPv4 address (interfaces with one: " + names + ")");
    }
    return found;
}

result<std::unique_ptr<fabric>> fabric::open(const fabric_request& request) {
    std::string who       = who_of(request);
    std::string requested = request.provider.empty() ? requested_provider() : request.provider;
    std::vector<std::string> available = available_providers(request);
    std::string provider               = requested;
    if (provider.empty()) {
        for (const char* p : preference) {
            if (std::find(available.begin(), available.end(), p) != available.end()) {
                provider = p;
                break;
            }
        }
        if (provider.empty() && !available.empty()) {
            provider = available.front();
        }
        if (provider.empty()) {
            return not_supported(who + "libfabric offers no provider for this endpoint type " +
                                 "with tagged messages");
        }
    } else if (std::find(available.begin(), available.end(), provider) == available.end()) {
        std::string asked = request.provider.empty() ? "LOOM_OFI_PROVIDER='" + provider + "'"
                                                     : "provider '" + provider + "'";
        return not_supported(who + asked + " is not available here (available: " + join(available) +
                             ")");
    }
    std::string node;
    if (network_provider(provider)) {
        LOOM_ASSIGN(node, bind_node(request.rank));
    }
    // The wanted capabilities where the provider grants them, else the required ones only.
    info_ptr info;
    int rc = -FI_ENODATA;
    if (request.wanted != 0) {
        rc = get_info(request, provider, node, request.caps | request.wanted, &info);
    }
    if (rc != 0) {
        rc = get_info(request, provider, node, request.caps, &info);
    }
    if (rc != 0) {
        return not_supported(who + "provider " + provider +
                             (node.empty() ? std::string() : " bound to " + node) +
                             " cannot open this endpoint: fi_getinfo: " + error_text(rc));
    }
    std::unique_ptr<fabric> f(new fabric());
    f->info_ = fi_dupinfo(info.get());  // the first match: libfabric's preferred one
    if (f->info_ == nullptr) {
        return system_error(who + "fi_dupinfo: out of memory");
    }
    LOOM_CHECK(f->open_objects(request));
    return f;
}

status fabric::open_objects(const fabric_request& request) {
    std::string who = who_of(request) + provider() + ": ";
    fid_fabric* fab = nullptr;
    if (int rc = fi_fabric(info_->fabric_attr, &fab, nullptr); rc != 0) {
        return system_error(who + "fi_fabric: " + error_text(rc));
    }
    fabric_.reset(fab);
    fid_domain* dom = nullptr;
    if (int rc = fi_domain(fab, info_, &dom, nullptr); rc != 0) {
        return system_error(who + "fi_domain: " + error_text(rc));
    }
    domain_.reset(dom);
    fi_av_attr av_attr{};
    av_attr.type  = FI_AV_TABLE;
    av_attr.count = request.av_size;
    fid_av* av    = nullptr;
    if (int rc = fi_av_open(dom, &av_attr, &av, nullptr); rc != 0) {
        return system_error(who + "fi_av_open: " + error_text(rc));
    }
    av_.reset(av);
    // A waitable queue where the provider has one: an idle rank sleeps in the kernel.
    fi_cq_attr cq_attr{};
    cq_attr.size     = request.cq_size;
    cq_attr.format   = FI_CQ_FORMAT_TAGGED;
    cq_attr.wait_obj = FI_WAIT_FD;
    fid_cq* cq       = nullptr;
    if (fi_cq_open(dom, &cq_attr, &cq, nullptr) != 0) {
        cq_attr.wait_obj = FI_WAIT_NONE;
        if (int rc = fi_cq_open(dom, &cq_attr, &cq, nullptr); rc != 0) {
            return system_error(who + "fi_cq_open: " + error_text(rc));
        }
    }
    cq_.reset(cq);
    if (cq_attr.wait_obj == FI_WAIT_FD) {
        int fd = -1;
        if (fi_control(&cq->fid, FI_GETWAIT, &fd) == 0) {
            wait_fd_ = fd;
        }
    }
    if (request.tx_size != 0) {
        info_->tx_attr->size = std::min(info_->tx_attr->size, request.tx_size);
    }
    if (request.rx_size != 0) {
        info_->rx_attr->size = std::min(info_->rx_attr->size, request.rx_size);
    }
    fid_ep* ep = nullptr;
    if (int rc = fi_endpoint(dom, info_, &ep, nullptr); rc != 0) {
        return system_error(who + "fi_endpoint: " + error_text(rc));
    }
    ep_.reset(ep);
    if (int rc = fi_ep_bind(ep, &av->fid, 0); rc != 0) {
        return system_error(who + "binding the address vector: " + error_text(rc));
    }
    if (int rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV); rc != 0) {
        return system_error(who + "binding the completion queue: " + error_text(rc));
    }
    if (int rc = fi_enable(ep); rc != 0) {
        return system_error(who + "fi_enable: " + error_text(rc));
    }
    std::vector<uint8_t> name(256);
    size_t len = name.size();
    if (int rc = fi_getname(&ep->fid, name.data(), &len); rc != 0) {
        return system_error(who + "fi_getname: " + error_text(rc));
    }
    static const char digits[] = "0123456789abcdef";
    address_.clear();
    for (size_t i = 0; i < len; ++i) {
        address_ += digits[name[i] >> 4];
        address_ += digits[name[i] & 15];
    }
    return status::ok();
}

fabric::~fabric() {
    ep_.reset();
    cq_.reset();
    av_.reset();
    domain_.reset();
    fabric_.reset();
    if (info_ != nullptr) {
        fi_freeinfo(info_);
    }
}

std::string fabric::provider() const {
    return info_->fabric_attr->prov_name != nullptr ? info_->fabric_attr->prov_name : "?";
}

std::string fabric::fabric_name() const {
    return info_->fabric_attr->name != nullptr ? info_->fabric_attr->name : "?";
}

std::string fabric::domain_name() const {
    return info_->domain_attr->name != nullptr ? info_->domain_attr->name : "?";
}

std::string fabric::caps_text() const {
    static const std::pair<uint64_t, const char*> names[] = {
        {FI_TAGGED, "tagged"},
        {FI_MSG, "msg"},
        {FI_RMA, "rma"},
        {FI_READ, "read"},
        {FI_WRITE, "write"},
        {FI_REMOTE_READ, "remote_read"},
        {FI_MULTI_RECV, "multi_recv"},
    };
    std::string s;
    for (const auto& [bit, name] : names) {
        if ((info_->caps & bit) != 0) {
            s += (s.empty() ? "" : "+") + std::string(name);
        }
    }
    return s.empty() ? "none" : s;
}

std::string fabric::mr_mode_text() const {
    static const std::pair<uint64_t, const char*> names[] = {
        {FI_MR_LOCAL, "local"},         {FI_MR_VIRT_ADDR, "virt_addr"},
        {FI_MR_ALLOCATED, "allocated"}, {FI_MR_PROV_KEY, "prov_key"},
        {FI_MR_ENDPOINT, "endpoint"},
    };
    std::string s;
    for (const auto& [bit, name] : names) {
        if ((uint64_t(info_->domain_attr->mr_mode) & bit) != 0) {
            s += (s.empty() ? "" : "+") + std::string(name);
        }
    }
    return s.empty() ? "none" : s;
}

result<fi_addr_t> fabric::insert(const std::string& hex, int peer_rank) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        return -1;
    };
    std::vector<uint8_t> raw(hex.size() / 2);
    for (size_t i = 0; i < raw.size(); ++i) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0 || hex.size() % 2 != 0) {
            return invalid_argument("ofi: peer " + std::to_string(peer_rank) +
                                    " published a malformed address '" + hex + "'");
        }
        raw[i] = uint8_t(hi << 4 | lo);
    }
    fi_addr_t addr = FI_ADDR_NOTAVAIL;
    int rc         = fi_av_insert(av_.get(), raw.data(), 1, &addr, 0, nullptr);
    if (rc != 1) {
        return system_error("ofi: " + provider() + ": inserting the address of peer " +
                            std::to_string(peer_rank) + ": " +
                            error_text(rc < 0 ? rc : -FI_EINVAL));
    }
    return addr;
}

bool fabric::try_wait() const {
    if (wait_fd_ < 0) {
        return false;
    }
    fid* f = &cq_->fid;
    return fi_trywait(fabric_.get(), &f, 1) == FI_SUCCESS;
}

}  // namespace loom::drivers::ofi
