// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/tcp: the datagram endpoint over one connected socket
// (tcp_datagram.cc), for the connect and listen side (tcp_datagram_setup.cc).
#pragma once

#include <memory>
#include <string>

#include "drivers/datagram_internal.hh"

namespace loom::drivers::tcp {

/// Takes over `fd` (a connected, non-blocking stream socket): frames on it from now on.
std::unique_ptr<datagram_endpoint> framed_socket(int fd, std::string address);

}  // namespace loom::drivers::tcp
