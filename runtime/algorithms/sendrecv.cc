// SPDX-License-Identifier: Apache-2.0
// Sendrecv family: one point-to-point transfer.
//
// How it works
//   direct (Lu-CA §8): rank `root` (the source) sends its `count` input elements to rank
//     `peer`, which receives them into its output. When root == peer the transfer is a local
//     copy on that rank. Every other rank has no steps. The vector goes as one message:
//     `segments` does not cut it (one link, nothing to overlap), and channels > 1 split it
//     into independent slices through the registry as for any elementwise primitive.
//
// Cost (per-edge and single-port alike: one transfer on one link)
//   α + M/BW (Lu-CA §8), M = count · dtype size; 0 when root == peer (a local copy, which
//   includes N = 1).
//
// Constraints
//   Any N ≥ 1, any count (including 0), any root and peer, any topology (on a torus or mesh
//   the message crosses the physical hops between the two, which the simulator models and
//   this closed form does not).
#include "families.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

status build_direct(const call& c, int rank, schedule::builder& b) {
    auto all_in = schedule::in(0, c.count), all_out = schedule::out(0, c.count);
    if (c.root == c.peer) {
        if (rank == c.root) {
            b.local_copy(all_out, all_in);
        }
    } else if (rank == c.root) {
        b.send(c.peer, all_in);
    } else if (rank == c.peer) {
        b.recv(c.root, all_out);
    }
    return status::ok();
}

cost cost_direct(const cost_query& q) {
    if (q.nranks == 1 || q.root == q.peer) {
        return {0, 0, true, "root == peer: a local copy"};
    }
    return {1, 1, true,
            "Lu-CA §8; per-edge and single-port alike; 0 when root == peer (a local copy)"};
}

const algorithm sendrecv_direct{"direct",
                                collective::sendrecv,
                                "the source sends the vector to the peer in one message",
                                "α + M/BW (0 when root == peer)",
                                "any N, any root and peer, any count",
                                any_call,
                                build_direct,
                                cost_direct};

}  // namespace

std::vector<const algorithm*> family_sendrecv() {
    return {&sendrecv_direct};
}

}  // namespace loom::algorithms
