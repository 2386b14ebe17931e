// SPDX-License-Identifier: Apache-2.0
// A frame_link over a datagram endpoint (drivers/datagram.hh: shm:, tcp:, ofi:, and the fault
// injector's lossy_datagram around any of them), so the reliable protocol runs between real
// processes without DPDK, and under injected loss, duplication and reordering.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.hh"
#include "drivers/common/frame_link.hh"
#include "drivers/datagram.hh"
#include "drivers/driver.hh"

namespace loom::drivers::reliable {

/// The link over `ep`: mtu() is datagram_max_frame; a frame the endpoint dropped because its
/// way was full is a refused send (retried by the protocol), one the fault injector dropped
/// is lost on the wire.
std::unique_ptr<common::frame_link> datagram_frame_link(std::unique_ptr<datagram_endpoint> ep);

/// Faults on the frames this rank sends (lossy_datagram); all zero: none.
struct link_faults {
    double drop = 0, dup = 0, reorder = 0;
    uint64_t seed = 1;
};

/// A full mesh of shm datagram links between the ranks of `config` (every other rank, or
/// config.peers): the lower rank of each pair listens at shm:<job>.rl.<low>.<high>, the higher
/// connects, within config.timeout_s. Entry r is the link to rank r (null for this rank and
/// for ranks that are no peer), so link_of_peer is the identity.
result<std::vector<std::unique_ptr<common::frame_link>>> shm_mesh(const endpoint_config& config,
                                                                  const link_faults& faults);

}  // namespace loom::drivers::reliable
