// The (peer, direction, tag) table every endpoint with early arrivals matches through:
// posted receives, early arrivals and sends waiting for the receiver, found in O(1) by
// open addressing. Sized when the endpoint opens; nothing here allocates per message. The
// states name what a reliable endpoint holds for a message whichever side came first; the
// transport decides what an early arrival's payload is (a buffer of its own, a rendezvous
// still at the sender).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::drivers::common {

enum class dir : uint8_t { recv = 0, send = 1 };

enum class entry_state : uint8_t {
    empty = 0,
    posted,         // a receive is posted, nothing arrived yet: buf, cap, cookie
    early_eager,    // an eager message arrived first: slot, msg_len, complete, claimed
    early_rts,      // a rendezvous request arrived first: msg_len
    awaiting_data,  // the receiver asked for the data (CTS), it lands in buf: buf, cap, cookie,
                    // msg_len
    awaiting_cts,   // (send side) the receiver was told (RTS): desc
};

struct entry {
    uint64_t tag;
    int32_t peer;
    dir direction;
    entry_state state;
    bool complete;   // early_eager: the whole payload is in the slot
    bool claimed;    // early_eager: a receive was posted while the payload was still arriving
    bool mismatch;   // early_eager, claimed: that receive expects another length or imm
    bool cancelled;  // awaiting_data or claimed early_eager: the receive was cancelled, the
                     // payload goes to a sink and nothing completes
    uint8_t* buf;
    uint64_t cap;  // the receive's length (it must match exactly)
    uint64_t imm;  // posted: the one expected; early: the one that came
    uint64_t cookie;
    uint8_t* slot;
    uint64_t msg_len;  // awaiting_cts: the send descriptor index
};

/// Linear probing with backward-shift deletion (no tombstones, so lookups stay short
/// however many messages came and went). Capacity is a power of two at least twice the
/// most entries allowed, so probes stay short. A key may appear twice (a duplicating fault
/// wrapper posts the same tag twice); find() then returns the oldest.
class match_table {
  public:
    void init(uint32_t max_entries);
    bool full() const { return count_ >= max_entries_; }
    uint32_t size() const { return count_; }
    uint64_t capacity() const { return slots_.size(); }

    /// The first entry for the key whose state is `want` (empty: any state), or null.
    entry* find(int peer, dir d, uint64_t tag, entry_state want = entry_state::empty);
    /// The early_eager entry for the key that is not claimed yet, or null.
    entry* find_unclaimed(int peer, uint64_t tag);
    /// The early_eager entry filling `slot`.
    entry* find_slot(int peer, uint64_t tag, const uint8_t* slot);
    /// The first entry for the key for which `pred(entry)` holds, or null.
    template <class Pred>
    entry* find_if(int peer, dir d, uint64_t tag, Pred pred) {
        return probe(peer, d, tag, pred);
    }
    /// A new entry for the key, or null when the table is full.
    entry* insert(int peer, dir d, uint64_t tag, entry_state state);
    void erase(entry* e);
    /// Slot i, for the failure sweep (which erases as it goes and so revisits i).
    entry& at(uint64_t i) { return slots_[i]; }

  private:
    uint64_t home(int peer, dir d, uint64_t tag) const;
    template <class Pred>
    entry* probe(int peer, dir d, uint64_t tag, Pred pred) {
        if (slots_.empty()) {
            return nullptr;
        }
        for (uint64_t i = home(peer, d, tag);; i = (i + 1) & mask_) {
            entry& e = slots_[i];
            if (e.state == entry_state::empty) {
                return nullptr;
            }
            if (e.tag == tag && e.peer == peer && e.direction == d && pred(e)) {
                return &e;
            }
        }
    }

    std::vector<entry> slots_;
    uint64_t mask_        = 0;
    uint32_t count_       = 0;
    uint32_t max_entries_ = 0;
};

}  // namespace loom::drivers::common
