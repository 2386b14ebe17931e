// SPDX-License-Identifier: Apache-2.0
// drivers/ofi/ofi_fabric: each provider this machine offers opens an RDM endpoint with a
// published address, and a peer's address goes into the address vector; a requested
// provider that is missing is an error naming the available ones; LOOM_OFI_ADDR binds a
// network provider to that address; a bad LOOM_OFI_IFACE names the interfaces there are.
#include <algorithm>
#include <string>

#include "base/params.hh"
#include "drivers/ofi/ofi_fabric.hh"
#include "test_main.hh"

using namespace loom;
namespace ofi = drivers::ofi;

namespace {

void set_param(const char* name, const std::string& value) {
    assert_true(params::registry::global().set(name, value).is_ok());
}

ofi::fabric_request rdm_tagged() {
    ofi::fabric_request r;
    r.ep_type = FI_EP_RDM;
    r.caps    = FI_TAGGED;
    r.wanted  = FI_RMA | FI_READ | FI_REMOTE_READ;
    return r;
}

bool offered(const std::string& name) {
    auto names = ofi::available_providers(rdm_tagged());
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

static void each_provider_opens_and_inserts_a_peer(void**) {
    set_param("LOOM_OFI_ADDR", "127.0.0.1");
    int opened = 0;
    for (const char* p : {"tcp;ofi_rxm", "shm", "udp;ofi_rxd", "net"}) {
        if (!offered(p)) {
            std::printf("# %s: not offered by this libfabric\n", p);
            continue;
        }
        set_param("LOOM_OFI_PROVIDER", p);
        auto a = ofi::fabric::open(rdm_tagged());
        if (!a.is_ok()) {
            LOOM_FAIL(std::string(p) + ": " + a.error().to_string());
        }
        auto b = ofi::fabric::open(rdm_tagged());
        assert_true(b.is_ok());
        assert_string_equal((*a)->provider().c_str(), p);
        assert_false((*a)->address().empty());
        assert_true((*a)->address() != (*b)->address());
        auto addr = (*a)->insert((*b)->address(), 1);
        assert_true(addr.is_ok());
        std::printf("# %s: fabric %s, domain %s, caps %s, mr_mode %s, wait fd %s\n", p,
                    (*a)->fabric_name().c_str(), (*a)->domain_name().c_str(),
                    (*a)->caps_text().c_str(), (*a)->mr_mode_text().c_str(),
                    (*a)->wait_fd() >= 0 ? "yes" : "no");
        ++opened;
    }
    assert_true(opened > 0);
}

static void missing_provider_names_the_available_ones(void**) {
    set_param("LOOM_OFI_PROVIDER", "no_such_provider");
    auto f = ofi::fabric::open(rdm_tagged());
    assert_false(f.is_ok());
    const std::string& m = f.error().message();
    std::printf("# %s\n", m.c_str());
    assert_true(m.find("LOOM_OFI_PROVIDER='no_such_provider' is not available") !=
                std::string::npos);
    assert_true(m.find("available: ") != std::string::npos);
    if (offered("tcp;ofi_rxm")) {
        assert_true(m.find("tcp;ofi_rxm") != std::string::npos);
    }
}

static void unset_provider_takes_the_best_network_one(void**) {
    set_param("LOOM_OFI_PROVIDER", "");
    set_param("LOOM_OFI_ADDR", "127.0.0.1");
    auto f = ofi::fabric::open(rdm_tagged());
    assert_true(f.is_ok());
    if (offered("tcp;ofi_rxm")) {  // no hardware here: the first of the socket providers
        assert_true((*f)->provider() != "shm");
    }
    std::printf("# best available: %s\n", (*f)->provider().c_str());
}

static void bad_interface_names_those_there_are(void**) {
    set_param("LOOM_OFI_PROVIDER", "tcp;ofi_rxm");
    set_param("LOOM_OFI_ADDR", "");
    set_param("LOOM_OFI_IFACE", "nosuch0");
    auto f = ofi::fabric::open(rdm_tagged());
    set_param("LOOM_OFI_IFACE", "");
    assert_false(f.is_ok());
    const std::string& m = f.error().message();
    assert_true(m.find("LOOM_OFI_IFACE='nosuch0' has no IPv4 address") != std::string::npos);
    assert_true(m.find("lo") != std::string::npos);
}

LOOM_TEST_MAIN("drivers_ofi_fabric", cmocka_unit_test(each_provider_opens_and_inserts_a_peer),
               cmocka_unit_test(missing_provider_names_the_available_ones),
               cmocka_unit_test(unset_provider_takes_the_best_network_one),
               cmocka_unit_test(bad_interface_names_those_there_are))
