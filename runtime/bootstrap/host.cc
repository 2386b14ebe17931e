// SPDX-License-Identifier: Apache-2.0
// What tells one host from another when ranks compare notes (bootstrap.hh, host_identity):
// the hostname alone does not, since network namespaces and containers of one machine share
// it while sharing no network (and, for containers, no /dev/shm).
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "base/net.hh"
#include "bootstrap/bootstrap.hh"

namespace loom::bootstrap {
namespace {

// The network namespace's inode: equal for processes in one namespace, different across
// `ip netns` namespaces and most containers.
std::string netns_inode() {
    struct stat st {};
    if (::stat("/proc/self/ns/net", &st) != 0) {
        return "-";
    }
    return std::to_string(static_cast<unsigned long long>(st.st_ino));
}

// The kernel's boot id: tells apart two machines that were given the same hostname.
std::string boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    if (!std::getline(in, id) || id.empty()) {
        return "-";
    }
    return id;
}

}  // namespace

std::string host_identity() {
    return "host=" + net::host_name() + " netns=" + netns_inode() + " boot=" + boot_id();
}

std::string host_of_identity(std::string_view identity) {
    if (!identity.starts_with("host=")) {
        return std::string(identity);
    }
    std::string_view rest = identity.substr(5);
    return std::string(rest.substr(0, rest.find(' ')));
}

}  // namespace loom::bootstrap
