// SPDX-License-Identifier: Apache-2.0
// The node's flat segment for small collectives (algorithms/flat.cc, flat_offload.hh): one
// POSIX shared-memory object per communicator, created by rank 0 (every rank is on the
// node: the communicator's transport is shm), mapped by the others.
//
// Layout, every part on its own cache line so no two writers share one:
//   line 0            header: magic, version, size, slot bytes, total bytes, creator pid
//   lines 1..N        one per rank: `done` (the flag of the last call it finished, below),
//                     the call it is in (flag and signature: mismatches), its pid
//                     (liveness) and its doorbell (a futex word and a "sleeping"
//                     flag: flat_offload.hh)
//   from a page on    per rank two buffers (call parity) of `slot_bytes` of LL words:
//                     8 bytes each, 4 of data and 4 of flag
//
// Naming and cleanup, as drivers/shm does for its segments but shorter-lived: the name is
// /dev/shm/loomflat-<job hash>-<creator pid>, published through the job's store; rank 0
// unlinks it as soon as every rank has mapped it (a store barrier, comm_flat.cc), so a
// crash afterwards leaves nothing behind, and a crash before that leaves a name whose
// creator is dead, which the next create() reclaims. Not a driver (drivers/ depend on
// runtime/base only and a driver's segments are its own), so it lives with the offload.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.hh"

namespace loom::comm {

struct flat_header {
    uint64_t magic       = 0;
    uint32_t version     = 0;
    uint32_t size        = 0;
    uint64_t slot_bytes  = 0;  // LL bytes of one buffer of one rank
    uint64_t total_bytes = 0;
    int32_t creator_pid  = 0;
};

struct alignas(64) flat_rank_line {
    std::atomic<uint32_t> done{0};        // flag of the last call this rank finished (0: none)
    std::atomic<int32_t> pid{0};          // set when the rank has mapped the segment
    std::atomic<uint32_t> bell{0};        // futex word: bumped by a writer that wakes this rank
    std::atomic<uint32_t> sleeping{0};    // 1 while this rank is armed to sleep on `bell`
    std::atomic<int32_t> waiting_on{-1};  // the rank whose slot or `done` it waits for
    std::atomic<uint64_t> call{0};        // flag << 32 | signature: the call it is in
};

class flat_segment {
  public:
    flat_segment() = default;
    flat_segment(flat_segment&& o) noexcept { *this = std::move(o); }
    flat_segment& operator=(flat_segment&& o) noexcept;
    flat_segment(const flat_segment&)            = delete;
    flat_segment& operator=(const flat_segment&) = delete;
    ~flat_segment();

    /// The name rank 0 creates for a job (the store publishes it to the others).
    static std::string name_for(const std::string& job, uint16_t comm_id);
    /// Creates and initialises the segment for `size` ranks and calls of up to `max_bytes`.
    static result<flat_segment> create(const std::string& name, int size, size_t max_bytes);
    /// Maps the segment another rank created; checks that it is the one for this call shape.
    static result<flat_segment> attach(const std::string& name, int size, size_t max_bytes);
    /// Removes the name (rank 0, once everyone mapped it); the mapping stays.
    void unlink();
    /// Unlinks loomflat-* names whose creator (the pid in the name) is gone; returns how many.
    static int reclaim_dead();

    bool mapped() const { return base_ != nullptr; }
    const std::string& name() const { return name_; }
    int size() const { return int(header()->size); }
    size_t slot_bytes() const { return header()->slot_bytes; }
    flat_header* header() const { return static_cast<flat_header*>(base_); }
    flat_rank_line* line(int rank) const {
        return reinterpret_cast<flat_rank_line*>(static_cast<char*>(base_) + 64 * (1 + rank));
    }
    /// Rank `rank`'s buffer `parity` as LL words.
    std::atomic<uint64_t>* slot(int rank, uint32_t parity) const {
        return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(base_) + data_offset_ +
                                                        (size_t(rank) * 2 + parity) *
                                                            header()->slot_bytes);
    }

  private:
    void unmap();
    void* base_         = nullptr;
    size_t bytes_       = 0;
    size_t data_offset_ = 0;
    std::string name_;
    bool owner_ = false;  // created it and has not unlinked it yet
};

}  // namespace loom::comm
