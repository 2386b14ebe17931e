// SPDX-License-Identifier: Apache-2.0
// Internal to drivers/shm: the datagram segment's layout, shared by the endpoint
// (shm_datagram.cc) and the hand-shake that creates and checks segments
// (shm_datagram_setup.cc). Changing any of it changes the wire format: bump segment_version.
#pragma once

#include <sys/types.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/spsc_ring.hh"
#include "base/status.hh"
#include "drivers/datagram_internal.hh"

namespace loom::drivers::shm::dgram {

constexpr size_t max_packet        = datagram_max_frame;
constexpr uint32_t ring_slots      = 256;  // power of two (the ring masks its counters)
constexpr uint32_t slot_bytes      = uint32_t((4 + max_packet + cache_line - 1) / cache_line *
                                              cache_line);  // length word + frame, line-aligned
constexpr uint32_t segment_magic   = 0x4c4d5348u;           // "LMSH"
constexpr uint32_t segment_version = 1;

/// The segment's first cache line: what the node checks before trusting the rings. Two rings
/// follow it: 0 (client → node) and 1 (node → client).
struct segment_header {
    uint32_t magic, version, slots, slot_bytes;
};

inline size_t ring_bytes() {
    return ring_spsc_bytes(ring_slots, slot_bytes);
}
inline size_t segment_bytes() {
    return cache_line + 2 * ring_bytes();
}

struct unix_address {
    sockaddr_un addr{};
    socklen_t len = 0;
};
/// The hand-shake socket of shm:NAME, in the abstract namespace ("\0loom-inc-NAME": nothing
/// on disk); an invalid argument when NAME does not fit.
result<unix_address> socket_address(std::string_view name);
/// Sends `len` bytes with `fd` attached (SCM_RIGHTS) on a Unix stream socket; what
/// sendmsg returns.
ssize_t send_with_fd(int sock, const void* bytes, size_t len, int fd);

/// The endpoint over a mapped, checked segment: sends into ring `to_peer` (0 for the client,
/// 1 for the node), receives from the other. Takes over `sock` and the mapping.
std::unique_ptr<datagram_endpoint> ring_endpoint(int sock, void* segment, int to_peer,
                                                 std::string address);

}  // namespace loom::drivers::shm::dgram
