// The same-call rule of driver.hh (same_call_other_imm) for messages that never meet their
// receive by tag: the two ranks run different schedules, so a receive and a message of the
// same call carry different tags. Each side remembers the last (tag, imm) it saw per peer;
// whichever of the receive and the message comes second checks the other's record, so a
// mismatch is found from the header, before any payload is copied.
#pragma once

#include <cstdint>

#include "drivers/driver.hh"

namespace loom::drivers::common {

/// The last (tag, imm) one side saw for a peer.
struct last_call {
    uint64_t tag = 0;
    uint64_t imm = 0;
    bool seen    = false;

    void remember(uint64_t t, uint64_t i) { tag = t, imm = i, seen = true; }
    /// True when (t, i) belongs to the remembered call but carries another immediate.
    bool contradicts(uint64_t t, uint64_t i) const {
        return seen && same_call_other_imm(t, i, tag, imm);
    }
};

/// Both records of one peer: the receives posted for it and the messages that came early.
struct call_records {
    last_call posted;
    last_call early;
};

}  // namespace loom::drivers::common
