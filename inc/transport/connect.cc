// connect_link / listen_links: pick the provider by the address's prefix.
#include "inc/transport/link.hh"

namespace loom::inc {

// The providers (tcp_link.cc, shm_link.cc), given the address without its prefix.
namespace detail {
result<std::unique_ptr<link>> connect_tcp(std::string_view rest, double timeout_s);
result<std::unique_ptr<listener>> listen_tcp(std::string_view rest);
result<std::unique_ptr<link>> connect_shm(std::string_view name, double timeout_s);
result<std::unique_ptr<listener>> listen_shm(std::string_view name);
}  // namespace detail

namespace {

status unknown(std::string_view address) {
    return invalid_argument("unknown link address '" + std::string(address) +
                            "': expected tcp:HOST:PORT or shm:NAME");
}

}  // namespace

result<std::unique_ptr<link>> connect_link(std::string_view address, double timeout_s) {
    if (address.starts_with("tcp:")) {
        return detail::connect_tcp(address.substr(4), timeout_s);
    }
    if (address.starts_with("shm:")) {
        return detail::connect_shm(address.substr(4), timeout_s);
    }
    return unknown(address);
}

result<std::unique_ptr<listener>> listen_links(std::string_view address) {
    if (address.starts_with("tcp:")) {
        return detail::listen_tcp(address.substr(4));
    }
    if (address.starts_with("shm:")) {
        return detail::listen_shm(address.substr(4));
    }
    return unknown(address);
}

}  // namespace loom::inc
