#include "drivers/tcp/tcp_match.hh"

#include <bit>

#include "base/hash.hh"

namespace loom::drivers::tcp {

// ---- match_table ----

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

template <class Pred>
entry* match_table::probe(int peer, dir d, uint64_t tag, Pred pred) {
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

// ---- slot_pool ----

namespace {
constexpr uint64_t smallest_class = 256;  // holds a free-list link and a typical small message
constexpr uint64_t chunk_bytes    = uint64_t{1} << 20;  // one growth step per class
}  // namespace

void slot_pool::init(uint64_t eager_limit, uint64_t cap_bytes) {
    cap_     = cap_bytes;
    classes_ = 0;
    for (uint64_t sz = smallest_class; classes_ < max_classes; sz *= 4) {
        class_bytes_[classes_++] = sz;
        if (sz >= eager_limit) {
            break;
        }
    }
    // One chunk of the smallest class up front: the common case (many small early
    // arrivals) never allocates after connect.
    grow(0);
}

int slot_pool::class_of(uint64_t len) const {
    for (int c = 0; c < classes_; ++c) {
        if (len <= class_bytes_[c]) {
            return c;
        }
    }
    return -1;
}

bool slot_pool::grow(int cls) {
    uint64_t size  = class_bytes_[cls];
    uint64_t count = size >= chunk_bytes ? 4 : chunk_bytes / size;
    if (bytes_ + size * count > cap_) {
        return false;
    }
    auto chunk = std::make_unique<uint8_t[]>(size * count);
    for (uint64_t i = 0; i < count; ++i) {
        auto* node = reinterpret_cast<free_node*>(chunk.get() + i * size);
        node->next = free_[cls];
        free_[cls] = node;
    }
    bytes_ += size * count;
    chunks_.push_back(std::move(chunk));
    return true;
}

uint8_t* slot_pool::get(uint64_t len) {
    int cls = class_of(len);
    if (cls < 0 || (free_[cls] == nullptr && !grow(cls))) {
        return nullptr;
    }
    free_node* node = free_[cls];
    free_[cls]      = node->next;
    return reinterpret_cast<uint8_t*>(node);
}

void slot_pool::put(uint8_t* slot, uint64_t len) {
    int cls    = class_of(len);
    auto* node = reinterpret_cast<free_node*>(slot);
    node->next = free_[cls];
    free_[cls] = node;
}

}  // namespace loom::drivers::tcp
