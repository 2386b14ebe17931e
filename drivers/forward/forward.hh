// SPDX-License-Identifier: Apache-2.0
// The forwarding wrapper "fwd:<inner>": point-to-point between any two ranks of a lattice
// (torus:…, mesh:…, ring:…) whose ranks are wired only to their physical neighbours.
//
// Each rank's inner endpoint connects only to shape::neighbours(rank) (endpoint_config.peers).
// A send to any rank goes out toward routing::route_table::to(dst).next (dimension-ordered,
// ties by LOOM_ROUTE_TIES); every rank on the way forwards it onward inside poll(). So the
// intermediate ranks must be polled: a communicator over fwd:<driver> needs a progress
// thread (LOOM_PROGRESS=thread) or a caller that keeps polling — a rank that stops polling
// stalls every route through it.
//
// Wire format. A message travels as chunks of at most LOOM_FWD_CHUNK bytes (64 KiB). Each
// chunk is two inner messages on one link: a 48-byte header (source, final destination,
// original tag and imm, total length, chunk offset and length, flags) with inner tag 2·seq,
// then, when the chunk has bytes, its payload with inner tag 2·seq+1 (seq counts the chunks
// of one directed link, modulo 2^31, so inner tags leave the call bits zero). Every rank
// keeps forward_config::headers (4) header receives posted per link.
//
// Cut-through and flow control. A router posts the payload receive of a chunk it forwards
// into one of LOOM_FWD_BUFFERS chunk buffers and sends it on as soon as it has landed. The
// buffers are split into one class per output channel, (port, virtual channel): the VC is
// the dateline rule of routing/dateline.hh, carried hop to hop in the header's flags, so a
// buffer only ever waits for a buffer of the next channel on its route, and those waits are
// acyclic (routing/channel_graph.hh checks every shape). A chunk whose class is busy waits
// in that class's queue, its payload left with the inner driver (back-pressure on the
// upstream send), while the link's other classes go on; at most an eighth of the chunk
// entries wait so, beyond that a header stays unposted and the link slows down. A source
// keeps at most forward_config::window (16) chunks of a message in flight. At the
// destination the payload receive of a matched chunk lands directly in the posted receive
// buffer; the payload of a chunk that arrives before its receive is read at once into an
// early buffer (chunk-sized, recycled: allocated only when more are in use than ever
// before), so that it never holds a router's buffer, and copied out when the receive is
// posted. The first header of a message is checked against the receive (imm, length, and
// the same-call rule of driver.hh): a mismatch completes the receive with
// LOOM_ERR_MISMATCH and the payload is drained into a sink, never into the receive buffer.
//
// Control tags travel as header-only chunks and are delivered as control completions.
// Sends to oneself go straight to the inner driver. cancel(): the chunks of a send not yet
// handed to the inner driver go on from a private copy (those already handed: see below);
// a receive's remaining chunks are drained into a sink. Counters: link_stats() below.
//
// Hot path: operations, chunks, messages and buffers come from pools sized at open; the
// queues are fixed arrays that only grow past an earlier peak (fifo.hh); a message and its
// receive find each other by (source, tag) in per-source lists of the shared matcher
// (drivers/common/matcher.hh), short because the chunk entries bound what is in flight.
// cancel() is not on it (it scans and copies).
//
// Files: forward_endpoint.cc (the endpoint glue), forward_route.cc (routing and flow
// control), forward_deliver.cc (delivery at the destination), forward_wire.hh.
//
// Limits (not yet done):
//  - the deadlock argument above covers the forwarder's own buffers; the inner driver's
//    per-peer queues (shm: LOOM_SHM_UNEXPECTED early arrivals, then the ring) are shared by
//    all classes of a link, so a payload parked there can still hold up a later header of
//    another class once they are full (not seen in the tests: torus 2x2x2, 3x3, 4x4, mesh
//    3x3, all collectives, up to 16 MiB per call);
//  - a send cancelled while chunks are with the inner driver: those are the inner
//    driver's to finish or revoke; a revoked chunk travels on flagged void and the
//    receive completes with LOOM_ERR_PEER_FAILURE and `withdrawn`;
//  - a cancelled receive whose message had not yet arrived leaves that message parked at
//    the destination (as any driver keeps an unmatched arrival), holding its chunk entries
//    and early buffers;
//  - a failed link is not rerouted around: sends over it fail with the inner status, but a
//    receive whose message would have crossed it is not failed by the wrapper (it waits
//    for the caller's deadline; the engine's failure notices still reach the other ranks
//    over the remaining routes only if those avoid the dead rank);
//  - communicators split from one over fwd:<driver> connect their members directly over
//    the inner driver (runtime/comm/comm_split.cc): forwarding within a child is not done.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "drivers/driver.hh"

namespace loom::drivers {

/// Per neighbour, in shape::neighbours() order; empty when `ep` is not a fwd wrapper.
std::vector<link_stat> link_stats(const endpoint& ep);

namespace forward {

struct forward_config {
    std::string fabric;  // the lattice shape ("torus:2x2x2")
    std::string ties = "toward-plus";
    size_t chunk     = 65536;
    uint32_t buffers = 64;    // forwarding chunk buffers
    uint32_t headers = 4;     // header receives posted per link
    uint32_t window  = 16;    // chunks of one message in flight from its source
    uint32_t max_ops = 4096;  // user operations and chunks in flight
};

/// LOOM_FABRIC (unless `fabric` is given), LOOM_ROUTE_TIES, LOOM_FWD_CHUNK, _BUFFERS,
/// _MAX_OPS.
result<forward_config> config_from_params(const std::string& fabric);

/// Opens `inner_name` connected to the neighbours only, and wraps it.
result<std::unique_ptr<endpoint>> open(std::string_view inner_name, const endpoint_config& config);

}  // namespace forward
}  // namespace loom::drivers
