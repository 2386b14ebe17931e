// SPDX-License-Identifier: Apache-2.0
// Which memif interface id a client of dpdk:memif:NAME takes when its address names none:
// the listener hands one out over a second abstract Unix socket, "loom-memif-ids-NAME"
// (nothing on disk), one byte per request. So every rank of a job connects to the one
// address a node announces, and no client is ever refused by the memif server for an id
// already taken (a refused client must stop and start its port to try another id, which
// DPDK 22.11's memif does not survive for long: its interrupt thread panicked).
// Used at connect and accept only, never per frame.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hh"

namespace loom::drivers::dpdk::memif_ids {

/// The listener's socket, non-blocking.
result<int> listen(const std::string& name);

/// Answers each request waiting on `fd` with the lowest id still `available` (taking it), or
/// with "none left". Never blocks.
void serve(int fd, std::vector<bool>& available);

/// Asks the listener of NAME for an id, trying until it listens and answers within
/// timeout_s (its answer comes when its owner polls accept()).
result<int64_t> ask(const std::string& name, double timeout_s);

}  // namespace loom::drivers::dpdk::memif_ids
