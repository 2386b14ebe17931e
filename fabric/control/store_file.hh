// SPDX-License-Identifier: Apache-2.0
// The embedded store of the control plane: the member table and the in-network slot
// allocations as one JSON file, written whole and atomically (a temporary file beside it, fsync,
// rename, fsync of the folder), so a controller killed at any moment leaves either the old or the
// new table, never half of one. Format 2 added the members' slots and the allocations; a format 1
// file is still read (no allocations, in-network members with default_slots).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.hh"
#include "members.hh"
#include "slots.hh"

namespace loom::control {

struct stored_table {
    std::vector<member> members;
    uint64_t next_id = 1;
    std::vector<allocation> allocations;
    uint64_t next_allocation_id = 1;
};

/// Writes the table to `path`.
status save_state(const std::string& path, const stored_table& table);
/// Writes a member table without allocations to `path`.
status save_state(const std::string& path, const std::vector<member>& members, uint64_t next_id);
/// The table in `path`; an empty table when the file does not exist yet. A file that is not
/// a table loom-ctld wrote is an error (it is never overwritten silently).
result<stored_table> load_state(const std::string& path);

}  // namespace loom::control
