// SPDX-License-Identifier: Apache-2.0
// The aggregation node's slot logic (aggregator.hh).
#include "inc/aggregator/aggregator.hh"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "kernels/reduce.hh"

namespace loom::inc {

struct aggregator::entry {
    bool used          = false;
    bool complete      = false;  // answered to the members
    bool waiting       = false;  // sent to the parent, its result not in yet
    bool has_data      = false;  // a broadcast's entry has data iff its root's data came
    uint32_t seq       = 0;
    uint64_t offset    = 0;
    loom_dtype_t dtype = LOOM_FLOAT32;
    loom_op_t op       = LOOM_SUM;
    uint16_t shape     = 0;  // flag_to_root / flag_from_root of the collective
    uint16_t root      = 0;
    uint32_t count     = 0;
    uint32_t have      = 0;  // contributors so far
    uint32_t acked     = 0;
    std::vector<uint64_t> contributed;  // bitmap over members
    std::vector<uint64_t> acks;
    std::vector<uint8_t> sum;   // the accumulated chunk
    std::vector<uint8_t> rows;  // deterministic mode: one chunk per member

    bool key_is(uint32_t s, uint64_t o) const { return used && seq == s && offset == o; }
    bool older_than(uint32_t s, uint64_t o) const {
        return !used || seq < s || (seq == s && offset < o);
    }
};

struct aggregator::group {
    group_config cfg;
    std::vector<entry> entries;  // two per slot
    size_t chunk_bytes = 0;
};

namespace {

constexpr uint16_t shape_flags = flag_to_root | flag_from_root;

bool test_bit(const std::vector<uint64_t>& b, uint32_t i) {
    return (b[i / 64] >> (i % 64) & 1) != 0;
}
void set_bit(std::vector<uint64_t>& b, uint32_t i) {
    b[i / 64] |= uint64_t{1} << (i % 64);
}

}  // namespace

aggregator::aggregator(const aggregator_config& c) : cfg_(c) {
    out_.resize(header_bytes + max_payload_bytes);
}

aggregator::~aggregator() = default;

aggregator::group* aggregator::find(uint64_t job, uint64_t comm) {
    for (auto& g : groups_) {
        if (g->cfg.job == job && g->cfg.comm == comm) {
            return g.get();
        }
    }
    return nullptr;
}

bool aggregator::answered(const header& h) {
    group* g = find(h.job, h.comm);
    if (g == nullptr || size_t(h.slot) * 2 >= g->entries.size()) {
        return false;
    }
    const entry* e = find_entry(*g, h);
    return e != nullptr && e->complete;
}

uint64_t group_bytes(const group_config& c) {
    const uint64_t words = (uint64_t(c.members) + 63) / 64;
    const uint64_t chunk = max_payload_bytes;
    const uint64_t entry = 128 /* the entry itself */ + 2 * words * 8 + chunk +
                           (c.deterministic ? chunk * c.members : 0);
    return 2 * uint64_t(c.slots) * entry;
}

status aggregator::admit(const group_config& c) {
    std::string name =
        "inc: job " + std::to_string(c.job) + " communicator " + std::to_string(c.comm);
    if (find(c.job, c.comm) != nullptr) {
        return invalid_argument(name + " is already admitted");
    }
    if (c.members < 1 || c.members > cfg_.max_members || c.expected < 1 || c.expected > c.members ||
        c.slots < 1) {
        return invalid_argument(name + ": " + std::to_string(c.members) + " members (1.." +
                                std::to_string(cfg_.max_members) + "), " +
                                std::to_string(c.expected) + " expected (1..members) and " +
                                std::to_string(c.slots) + " slots (>= 1)");
    }
    uint64_t job_slots = 0, job_bytes = 0;
    for (const auto& g : groups_) {
        job_slots += g->cfg.job == c.job ? g->entries.size() / 2 : 0;
        job_bytes += g->cfg.job == c.job ? group_bytes(g->cfg) : 0;
    }
    if (job_slots + c.slots > cfg_.job_quota ||
        uint64_t(used_slots_) + c.slots > cfg_.total_slots) {
        return status(LOOM_ERR_NO_RESOURCE,
                      "inc: job " + std::to_string(c.job) + " asks " + std::to_string(c.slots) +
                          " slots; it holds " + std::to_string(job_slots) + " of its quota " +
                          std::to_string(cfg_.job_quota) + " (--job-quota), the node " +
                          std::to_string(used_slots_) + " of " + std::to_string(cfg_.total_slots) +
                          " (--slots)");
    }
    const uint64_t bytes = group_bytes(c);
    auto mib = [](uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
    if (job_bytes + bytes > cfg_.job_memory || used_bytes_ + bytes > cfg_.memory_limit) {
        return status(LOOM_ERR_NO_RESOURCE,
                      name + " needs " + mib(bytes) + " of aggregation memory (" +
                          std::to_string(c.members) + " members x " + std::to_string(c.slots) +
                          " slots" + (c.deterministic ? ", deterministic" : "") +
                          "); the job holds " + mib(job_bytes) + " of its limit " +
                          mib(cfg_.job_memory) + " (--job-memory), the node " + mib(used_bytes_) +
                          " of " + mib(cfg_.memory_limit) + " (--max-memory)");
    }
    auto g         = std::make_unique<group>();
    g->cfg         = c;
    g->chunk_bytes = max_payload_bytes;
    g->entries.resize(size_t(c.slots) * 2);
    size_t words = (c.members + 63) / 64;
    for (entry& e : g->entries) {
        e.contributed.assign(words, 0);
        e.acks.assign(words, 0);
        e.sum.resize(g->chunk_bytes);
        if (c.deterministic) {
            e.rows.resize(g->chunk_bytes * c.members);
        }
    }
    used_slots_ += c.slots;
    used_bytes_ += bytes;
    groups_.push_back(std::move(g));
    return status::ok();
}

void aggregator::release(uint64_t job, uint64_t comm) {
    for (size_t i = 0; i < groups_.size(); ++i) {
        if (groups_[i]->cfg.job == job && groups_[i]->cfg.comm == comm) {
            for (const entry& e : groups_[i]->entries) {
                stats_.awaiting_parent -= e.waiting ? 1 : 0;
            }
            used_slots_ -= uint32_t(groups_[i]->entries.size() / 2);
            used_bytes_ -= group_bytes(groups_[i]->cfg);
            groups_.erase(groups_.begin() + long(i));
            return;
        }
    }
}

void aggregator::on_packet(const header& h, const uint8_t* payload, packet_sink& out) {
    group* g = find(h.job, h.comm);
    if (g == nullptr) {
        ++stats_.unknown_group;
        return;
    }
    if (size_t(h.slot) * 2 >= g->entries.size()) {
        ++stats_.bad_slot;
        return;
    }
    if (h.kind == packet_kind::result) {
        from_parent(*g, h, payload, out);  // its contributor names us at the parent
        return;
    }
    if (h.contributor >= g->cfg.members) {
        ++stats_.bad_member;
        return;
    }
    if (h.kind == packet_kind::contribute) {
        contribute(*g, h, payload, out);
        return;
    }
    entry* e = h.kind == packet_kind::ack ? find_entry(*g, h) : nullptr;
    if (e != nullptr && e->complete && !test_bit(e->acks, h.contributor)) {
        set_bit(e->acks, h.contributor);
        ++e->acked;
        ++stats_.acks;
    }
}

// The entry of h's key in its slot, or null.
aggregator::entry* aggregator::find_entry(group& g, const header& h) {
    entry* pair = &g.entries[size_t(h.slot) * 2];
    return pair[0].key_is(h.seq, h.offset)   ? &pair[0]
           : pair[1].key_is(h.seq, h.offset) ? &pair[1]
                                             : nullptr;
}

// The entry of h's key, a new one replacing the older of the slot's two, or null (stale).
aggregator::entry* aggregator::entry_for(group& g, const header& h) {
    if (entry* e = find_entry(g, h)) {
        return e;
    }
    entry* pair = &g.entries[size_t(h.slot) * 2];
    // A new phase replaces the older entry, which must be complete (p−1: delivered to all,
    // aggregator.hh); anything else is a phase older than both, or a client that ran ahead
    // of a result: dropped.
    entry* old    = !pair[0].used                                     ? &pair[0]
                    : !pair[1].used                                   ? &pair[1]
                    : pair[0].older_than(pair[1].seq, pair[1].offset) ? &pair[0]
                                                                      : &pair[1];
    entry* latest = old == &pair[0] ? &pair[1] : &pair[0];
    bool newer    = latest->older_than(h.seq, h.offset);
    if (!newer || (latest->used && !latest->complete)) {
        ++stats_.stale;
        return nullptr;
    }
    entry* e = old;
    stats_.awaiting_parent -= e->waiting ? 1 : 0;
    e->used     = true;
    e->complete = false;
    e->waiting  = false;
    e->has_data = false;
    e->seq      = h.seq;
    e->offset   = h.offset;
    e->dtype    = h.dtype;
    e->op       = h.op;
    e->shape    = h.flags & shape_flags;
    e->root     = h.root;
    e->count    = h.count;
    e->have = e->acked = 0;
    std::fill(e->contributed.begin(), e->contributed.end(), 0);
    std::fill(e->acks.begin(), e->acks.end(), 0);
    return e;
}

// Whether h fits the entry's shape. A broadcast takes data from whichever contributor
// brings it (its root, or the child node above it), at most one; everyone else brings none.
// Every other collective's contributions all carry data.
bool aggregator::accepts(const entry& e, const header& h) {
    if (h.dtype != e.dtype || h.op != e.op || h.count != e.count ||
        (h.flags & shape_flags) != e.shape || h.root != e.root) {
        return false;
    }
    bool brings = (h.flags & flag_no_data) == 0;
    if ((e.shape & flag_from_root) == 0) {
        return brings;
    }
    return !brings || !e.has_data || test_bit(e.contributed, h.contributor);
}

void aggregator::contribute(group& g, const header& h, const uint8_t* payload, packet_sink& out) {
    entry* e = entry_for(g, h);
    if (e == nullptr) {
        return;
    }
    if (!accepts(*e, h)) {
        ++stats_.mismatched;
        return;
    }
    if (test_bit(e->contributed, h.contributor)) {
        ++stats_.duplicates;
        if (e->complete) {
            send_result(g, *e, out, int(h.contributor));  // its result was lost
            ++stats_.resent;
        } else if (e->waiting) {
            send_up(g, *e, out);  // the upward contribution or the parent's result was lost
            ++stats_.reforwarded;
        }
        return;
    }
    store(g, *e, h, payload);
    set_bit(e->contributed, h.contributor);
    ++e->have;
    ++stats_.contributions;
    if (e->have == g.cfg.expected) {
        complete(g, *e, out);
    }
}

void aggregator::store(group& g, entry& e, const header& h, const uint8_t* payload) {
    size_t n = payload_bytes(h);
    if ((e.shape & flag_from_root) != 0) {
        if (n > 0) {
            std::memcpy(e.sum.data(), payload, n);
            e.has_data = true;
        }
    } else if (g.cfg.deterministic) {
        std::memcpy(e.rows.data() + size_t(h.contributor) * g.chunk_bytes, payload, n);
    } else if (e.have == 0) {
        std::memcpy(e.sum.data(), payload, n);
    } else {
        kernels::reduce_kernel(h.dtype, h.op)(e.sum.data(), e.sum.data(), payload, h.count);
    }
}

void aggregator::complete(group& g, entry& e, packet_sink& out) {
    if ((e.shape & flag_from_root) == 0) {
        e.has_data = true;
        if (g.cfg.deterministic) {
            // In contributor-id order over the ids that contributed (expected may be fewer
            // than members), so the float sum is the same whatever the arrival order.
            kernels::reduce_fn f = kernels::reduce_kernel(e.dtype, e.op);
            size_t n             = size_t(e.count) * element_bytes(e.dtype);
            bool first           = true;
            for (uint32_t r = 0; r < g.cfg.members; ++r) {
                if (!test_bit(e.contributed, r)) {
                    continue;
                }
                const uint8_t* row = e.rows.data() + size_t(r) * g.chunk_bytes;
                if (first) {
                    std::memcpy(e.sum.data(), row, n);
                } else {
                    f(e.sum.data(), e.sum.data(), row, e.count);
                }
                first = false;
            }
        }
    }
    if (g.cfg.upstream) {
        e.waiting = true;
        ++stats_.awaiting_parent;
        ++stats_.forwarded;
        send_up(g, e, out);
        return;
    }
    answer(g, e, out);
}

void aggregator::answer(group& g, entry& e, packet_sink& out) {
    e.complete = true;
    ++stats_.results;
    if ((e.shape & flag_to_root) == 0 || g.cfg.members_are_nodes) {
        send_result(g, e, out, -1);
        return;
    }
    // A reduce: the data goes to the root; the others only learn that the chunk is done
    // (their window moves on).
    for (uint32_t r = 0; r < g.cfg.members; ++r) {
        if (test_bit(e.contributed, r)) {
            send_result(g, e, out, int(r));
        }
    }
}

void aggregator::from_parent(group& g, const header& h, const uint8_t* payload, packet_sink& out) {
    entry* e = find_entry(g, h);
    if (e == nullptr || !g.cfg.upstream) {
        ++stats_.stale;
        return;
    }
    if (!e->waiting) {
        ++stats_.duplicates;  // answered already (the parent resent, or answered twice)
        return;
    }
    if (h.dtype != e->dtype || h.op != e->op || h.count != e->count ||
        (h.flags & shape_flags) != e->shape) {
        ++stats_.mismatched;
        return;
    }
    e->has_data = (h.flags & flag_no_data) == 0;
    if (e->has_data) {
        std::memcpy(e->sum.data(), payload, payload_bytes(h));
    }
    e->waiting = false;
    --stats_.awaiting_parent;
    ++stats_.from_parent;
    answer(g, *e, out);
}

// The header of an entry's packet (a result down, or the partial going up).
header aggregator::packet_of(const group& g, const entry& e, packet_kind kind, bool no_data) {
    header h;
    h.kind   = kind;
    h.dtype  = e.dtype;
    h.op     = e.op;
    h.flags  = uint16_t((g.cfg.deterministic ? flag_deterministic : 0) | e.shape |
                        (no_data ? flag_no_data : 0));
    h.root   = e.root;
    h.job    = g.cfg.job;
    h.comm   = g.cfg.comm;
    h.seq    = e.seq;
    h.slot   = uint32_t((&e - g.entries.data()) / 2);
    h.offset = e.offset;
    h.count  = e.count;
    return h;
}

void aggregator::send_up(group& g, const entry& e, packet_sink& out) {
    header c      = packet_of(g, e, packet_kind::contribute, !e.has_data);
    c.contributor = g.cfg.up_index;
    size_t len    = encode(c, e.sum.data(), out_.data());
    out.upstream(g.cfg.job, g.cfg.comm, out_.data(), len);
}

void aggregator::send_result(group& g, const entry& e, packet_sink& out, int to_member) {
    bool no_data  = !e.has_data || ((e.shape & flag_to_root) != 0 && !g.cfg.members_are_nodes &&
                                   to_member != int(e.root));
    header r      = packet_of(g, e, packet_kind::result, no_data);
    r.contributor = to_member < 0 ? 0 : uint32_t(to_member);
    size_t len    = encode(r, e.sum.data(), out_.data());
    if (to_member < 0) {
        out.multicast(g.cfg.job, g.cfg.comm, out_.data(), len);
    } else {
        out.unicast(g.cfg.job, g.cfg.comm, uint32_t(to_member), out_.data(), len);
    }
}

}  // namespace loom::inc
