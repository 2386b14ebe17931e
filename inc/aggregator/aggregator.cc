// The aggregation node's slot logic (aggregator.hh).
#include "inc/aggregator/aggregator.hh"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "engine/reduce.hh"

namespace loom::inc {

struct aggregator::entry {
    bool used          = false;
    bool complete      = false;
    uint32_t seq       = 0;
    uint64_t offset    = 0;
    loom_dtype_t dtype = LOOM_FLOAT32;
    loom_op_t op       = LOOM_SUM;
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
    uint32_t job = 0, comm = 0, members = 0;
    bool deterministic = false;
    std::vector<entry> entries;  // two per slot
    size_t chunk_bytes = 0;
};

namespace {

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

aggregator::group* aggregator::find(uint32_t job, uint32_t comm) {
    for (auto& g : groups_) {
        if (g->job == job && g->comm == comm) {
            return g.get();
        }
    }
    return nullptr;
}

status aggregator::admit(uint32_t job, uint32_t comm, uint32_t members, uint32_t slots,
                         bool deterministic) {
    if (find(job, comm) != nullptr) {
        return invalid_argument("inc: job " + std::to_string(job) + " communicator " +
                                std::to_string(comm) + " is already admitted");
    }
    if (members < 1 || members > cfg_.max_members || slots < 1) {
        return invalid_argument("inc: " + std::to_string(members) + " members (1.." +
                                std::to_string(cfg_.max_members) + ") and " +
                                std::to_string(slots) + " slots (>= 1)");
    }
    uint32_t job_slots = 0;
    for (const auto& g : groups_) {
        job_slots += g->job == job ? uint32_t(g->entries.size() / 2) : 0;
    }
    if (job_slots + slots > cfg_.job_quota || used_slots_ + slots > cfg_.total_slots) {
        return status(LOOM_ERR_NO_RESOURCE,
                      "inc: job " + std::to_string(job) + " asks " + std::to_string(slots) +
                          " slots; it holds " + std::to_string(job_slots) + " of its quota " +
                          std::to_string(cfg_.job_quota) + ", the node " +
                          std::to_string(used_slots_) + " of " + std::to_string(cfg_.total_slots));
    }
    auto g           = std::make_unique<group>();
    g->job           = job;
    g->comm          = comm;
    g->members       = members;
    g->deterministic = deterministic;
    g->chunk_bytes   = max_payload_bytes;
    g->entries.resize(size_t(slots) * 2);
    size_t words = (members + 63) / 64;
    for (entry& e : g->entries) {
        e.contributed.assign(words, 0);
        e.acks.assign(words, 0);
        e.sum.resize(g->chunk_bytes);
        if (deterministic) {
            e.rows.resize(g->chunk_bytes * members);
        }
    }
    used_slots_ += slots;
    groups_.push_back(std::move(g));
    return status::ok();
}

void aggregator::release(uint32_t job, uint32_t comm) {
    for (size_t i = 0; i < groups_.size(); ++i) {
        if (groups_[i]->job == job && groups_[i]->comm == comm) {
            used_slots_ -= uint32_t(groups_[i]->entries.size() / 2);
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
    if (h.contributor >= g->members) {
        ++stats_.bad_member;
        return;
    }
    if (size_t(h.slot) * 2 >= g->entries.size()) {
        ++stats_.bad_slot;
        return;
    }
    if (h.kind == packet_kind::contribute) {
        contribute(*g, h, payload, out);
        return;
    }
    if (h.kind == packet_kind::ack) {
        for (int k = 0; k < 2; ++k) {
            entry& e = g->entries[size_t(h.slot) * 2 + size_t(k)];
            if (e.key_is(h.seq, h.offset) && e.complete && !test_bit(e.acks, h.contributor)) {
                set_bit(e.acks, h.contributor);
                ++e.acked;
                ++stats_.acks;
            }
        }
    }
}

void aggregator::contribute(group& g, const header& h, const uint8_t* payload, packet_sink& out) {
    entry* pair = &g.entries[size_t(h.slot) * 2];
    entry* e    = pair[0].key_is(h.seq, h.offset)   ? &pair[0]
                  : pair[1].key_is(h.seq, h.offset) ? &pair[1]
                                                    : nullptr;
    if (e == nullptr) {
        // A new phase replaces the older entry, which must be complete (p−1: delivered to
        // all, aggregator.hh); anything else is a phase older than both, or a client that
        // ran ahead of a result: dropped.
        entry* old    = !pair[0].used                                     ? &pair[0]
                        : !pair[1].used                                   ? &pair[1]
                        : pair[0].older_than(pair[1].seq, pair[1].offset) ? &pair[0]
                                                                          : &pair[1];
        entry* latest = old == &pair[0] ? &pair[1] : &pair[0];
        bool newer    = latest->older_than(h.seq, h.offset);
        if (!newer || (latest->used && !latest->complete)) {
            ++stats_.stale;
            return;
        }
        e           = old;
        e->used     = true;
        e->complete = false;
        e->seq      = h.seq;
        e->offset   = h.offset;
        e->dtype    = h.dtype;
        e->op       = h.op;
        e->count    = h.count;
        e->have = e->acked = 0;
        std::fill(e->contributed.begin(), e->contributed.end(), 0);
        std::fill(e->acks.begin(), e->acks.end(), 0);
    }
    if (h.dtype != e->dtype || h.op != e->op || h.count != e->count) {
        ++stats_.mismatched;
        return;
    }
    if (test_bit(e->contributed, h.contributor)) {
        ++stats_.duplicates;
        if (e->complete) {
            send_result(g, *e, out, int(h.contributor));  // its result was lost
            ++stats_.resent;
        }
        return;
    }
    size_t n = payload_bytes(h);
    if (g.deterministic) {
        std::memcpy(e->rows.data() + size_t(h.contributor) * g.chunk_bytes, payload, n);
    } else if (e->have == 0) {
        std::memcpy(e->sum.data(), payload, n);
    } else {
        engine::reduce_kernel(h.dtype, h.op)(e->sum.data(), e->sum.data(), payload, h.count);
    }
    set_bit(e->contributed, h.contributor);
    ++e->have;
    ++stats_.contributions;
    if (e->have == g.members) {
        complete(g, *e, out);
    }
}

void aggregator::complete(group& g, entry& e, packet_sink& out) {
    if (g.deterministic) {
        size_t n = size_t(e.count) * element_bytes(e.dtype);
        std::memcpy(e.sum.data(), e.rows.data(), n);
        engine::reduce_fn f = engine::reduce_kernel(e.dtype, e.op);
        for (uint32_t r = 1; r < g.members; ++r) {
            f(e.sum.data(), e.sum.data(), e.rows.data() + size_t(r) * g.chunk_bytes, e.count);
        }
    }
    e.complete = true;
    ++stats_.results;
    send_result(g, e, out, -1);
}

void aggregator::send_result(group& g, const entry& e, packet_sink& out, int to_rank) {
    header r;
    r.kind        = packet_kind::result;
    r.dtype       = e.dtype;
    r.op          = e.op;
    r.flags       = g.deterministic ? flag_deterministic : 0;
    r.job         = g.job;
    r.comm        = g.comm;
    r.seq         = e.seq;
    r.slot        = uint32_t((&e - g.entries.data()) / 2);
    r.offset      = e.offset;
    r.count       = e.count;
    r.contributor = to_rank < 0 ? 0 : uint32_t(to_rank);
    size_t len    = encode(r, e.sum.data(), out_.data());
    if (to_rank < 0) {
        out.multicast(g.job, g.comm, out_.data(), len);
    } else {
        out.unicast(g.job, g.comm, uint32_t(to_rank), out_.data(), len);
    }
}

}  // namespace loom::inc
