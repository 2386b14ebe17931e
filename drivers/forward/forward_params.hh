// SPDX-License-Identifier: Apache-2.0
// The forwarding wrapper (fwd:<driver>): chunking and flow control (its fabric and tie rule
// are fabric/routing's parameters).
#pragma once

#include "base/params.hh"

namespace loom::drivers::forward::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"forward"};

inline const loom::params::int_param chunk{
    component, "LOOM_FWD_CHUNK", "65536", "bytes",
    "largest chunk fwd:<driver> cuts a message into (forwarded cut-through, chunk by chunk)"};
inline const loom::params::int_param buffers{
    component, "LOOM_FWD_BUFFERS", "64", "chunks",
    "chunk buffers a fwd:<driver> rank forwards through, split evenly (at least 2 each) over its "
    "output channels (port and dateline VC); a chunk whose channel has none free waits, its "
    "payload in the inner driver (back-pressure)"};
inline const loom::params::int_param max_ops{
    component, "LOOM_FWD_MAX_OPS", "4096", "operations",
    "operations and chunks in flight through a fwd:<driver> rank; when chunks run out, arriving "
    "headers wait (back-pressure) and new operations get LOOM_ERR_NO_RESOURCE"};

}  // namespace loom::drivers::forward::params
