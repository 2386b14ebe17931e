// SPDX-License-Identifier: Apache-2.0
// loom_request_t values: not pointers but tagged numbers (communicator slot, handle index,
// generation), so a garbage, freed or stale handle is recognised and refused instead of being
// followed. A communicator registers its handle pool here at creation and leaves at destroy
// (a lock there only); decoding a handle reads atomics and never dereferences the value.
#pragma once

#include <loom/loom.h>

#include <cstddef>
#include <cstdint>

namespace loom::comm {

struct request_handle;

namespace request_registry {

/// Registers a pool of `n` handles (n <= 4096); returns its slot, or -1 when every slot is
/// taken (more than 4096 communicators alive at once).
int add_pool(request_handle* handles, size_t n);
/// Forgets the pool in `slot` (at communicator destroy); its handles decode to null after.
void remove_pool(int slot);
/// A fresh generation for a handle about to be handed out (never 0).
uint32_t next_generation();
/// The value the caller gets for handle `index` of the pool in `slot`.
loom_request_t encode(int slot, size_t index, uint32_t generation);
/// The live handle `req` names, or null when it names none (garbage, freed, stale, or of a
/// destroyed communicator).
request_handle* decode(loom_request_t req);

}  // namespace request_registry
}  // namespace loom::comm
