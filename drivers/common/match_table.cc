// The (peer, direction, tag) table (match_table.hh).
#include "drivers/common/match_table.hh"

#include <bit>

#include "base/hash.hh"

namespace loom::drivers::common {

void match_table::init(uint32_t max_entries) {
    max_entries_ = max_entries;
    // Twice the entries, rounded up to a power of two: load factor <= 1/2 keeps linear
    // probes to a couple of slots.
    uint64_t cap = std::bit_ceil(uint64_t{max_entries} * 2 + 2);
    slots_.assign(cap, entry{});
    mask_  = cap - 1;
    count_ = 0;
}

uint64_t match_table::home(int peer, dir d, uint64_t tag) const {
    // splitmix64 finaliser over tag ^ (peer, dir): engine tags differ in low and high bits
    // alike (sequence number, step, chunk), so mix them all.
    return mix64(tag ^ (uint64_t(uint32_t(peer)) << 1 | uint64_t(d)) * golden_gamma) & mask_;
}

entry* match_table::find(int peer, dir d, uint64_t tag, entry_state want) {
    return probe(peer, d, tag,
                 [want](const entry& e) { return want == entry_state::empty || e.state == want; });
}

entry* match_table::find_unclaimed(int peer, uint64_t tag) {
    return probe(peer, dir::recv, tag, [](const entry& e) {
        return (e.state == entry_state::early_eager && !e.claimed) ||
               e.state == entry_state::early_rts;
    });
}

entry* match_table::find_slot(int peer, uint64_t tag, const uint8_t* slot) {
    return probe(peer, dir::recv, tag, [slot](const entry& e) {
        return e.state == entry_state::early_eager && e.slot == slot;
    });
}

entry* match_table::insert(int peer, dir d, uint64_t tag, entry_state state) {
    if (full()) {
        return nullptr;
    }
    uint64_t i = home(peer, d, tag);
    while (slots_[i].state != entry_state::empty) {
        i = (i + 1) & mask_;
    }
    entry& e    = slots_[i];
    e           = entry{};
    e.tag       = tag;
    e.peer      = peer;
    e.direction = d;
    e.state     = state;
    ++count_;
    return &e;
}

void match_table::erase(entry* e) {
    // Backward-shift deletion: move later members of the probe run into the hole whenever
    // their home slot does not lie cyclically in (hole, their position].
    uint64_t hole = uint64_t(e - slots_.data());
    for (uint64_t j = (hole + 1) & mask_;; j = (j + 1) & mask_) {
        entry& next = slots_[j];
        if (next.state == entry_state::empty) {
            break;
        }
        uint64_t h = home(next.peer, next.direction, next.tag);
        bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (!stays) {
            slots_[hole] = next;
            hole         = j;
        }
    }
    slots_[hole] = entry{};
    --count_;
}

}  // namespace loom::drivers::common
