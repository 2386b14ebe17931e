// SPDX-License-Identifier: Apache-2.0
// Flat family: small all-reduce, reduce and broadcast through one shared segment of the
// node (every rank of the communicator on one host over shm).
//
// How it works
//   Every rank that contributes writes its vector into its own slot of the node's flat
//   segment as LL words: 4 bytes of data and a 4-byte flag (the call's sequence number) in
//   one 8-byte store, so a reader polls the data itself, with no header message, no
//   rendezvous and no reset between calls. Every rank that needs the result reads the slots
//   it needs, word by word as their flags turn current, and reduces while reading (the
//   runtime's offload, comm/flat_offload.hh; two buffers per slot make reuse safe).
//   The steps are the in-network vocabulary, one pair per call: inc_push (write my slot)
//   and inc_pull (read the slots into my output); schedule_info::node_local sends them to
//   the node-local offload instead of an aggregation node.
//   allreduce: every rank writes and reads all N slots.
//   reduce:    every rank writes; only the root reads.
//   broadcast: only the root writes; every rank reads the root's slot.
//
// Cost (α_flat: one hand-off through the segment, a cache line moving between cores,
// calibrated per host and N as alpha_flat_us; BW the pair bandwidth of messages)
//   allreduce, reduce: α_flat + (N+1)/2·M/BW
//   broadcast:         α_flat + M/BW
//   A reader reads N slots of LL words (2·N·M bytes) and the writer writes 2·M, but from
//   the writers' caches at several times a message's pair bandwidth (no ring slot, no
//   header, no second copy): measured on the 2-core VM the time grew by 0.48 µs per KiB
//   at N = 2 and 1.4 at N = 4 (docs/performance.md#flat), which (N+1)/2·M/BW at the
//   built-in shm BW (4 GB/s: 0.38 and 0.64) follows at N = 2 and a calibrated BW (lower
//   with more ranks than cores) at N = 4. The β term grows with N (every reader reads
//   every slot), so the family wins only for small vectors: the runtime offers it up to
//   LOOM_FLAT_MAX_BYTES and the tuner ranks it against the others below that.
//
// Constraints
//   Any N ≥ 1, any count, any root, one channel (segments are ignored: one pair per call).
//   The runtime also needs every rank on one node over shm with the segment set up on all
//   of them, and the call's vector within the slot (node_local, tuner::admits).
#include "families.hh"
#include "util.hh"

namespace loom::algorithms {
namespace {

status flat_applicable(const call& c) {
    if (c.channels != 1) {
        return status(LOOM_ERR_NOT_APPLICABLE, "flat: one channel only (the segment is the call)");
    }
    return status::ok();
}

status build_flat(const call& c, int rank, schedule::builder& b) {
    const bool writes      = c.coll != collective::broadcast || rank == c.root;
    const bool reads       = c.coll != collective::reduce || rank == c.root;
    const int contributors = c.coll == collective::broadcast ? 1 : c.nranks;
    if (writes) {
        b.inc_push(schedule::in(0, c.count), 0, contributors);
    }
    if (reads) {
        b.inc_pull(schedule::out(0, c.count), 0, contributors);
    }
    return status::ok();
}

cost cost_flat(const cost_query& q) {
    cost k;
    k.n_alpha_flat = 1;
    k.n_beta = q.coll == collective::broadcast ? 1.0 : (static_cast<double>(q.nranks) + 1) / 2;
    k.note   = "node-local: α_flat per hand-off through the shared segment; reads from cache";
    return k;
}

constexpr algorithm flat_for(collective coll, std::string_view summary, std::string_view formula,
                             std::string_view constraints) {
    return {"flat",     coll,      summary, formula, constraints, flat_applicable,
            build_flat, cost_flat, false,   false,   false,       true};
}

constexpr algorithm allreduce_flat =
    flat_for(collective::allreduce,
             "every rank writes its vector into its slot of the node's shared segment (data and "
             "flag in one store) and reduces all slots while reading them",
             "α_flat + (N+1)/2·M/BW", "any N, any count; all ranks on one node over shm");
constexpr algorithm reduce_flat = flat_for(
    collective::reduce, "every rank writes its slot of the node's shared segment; the root reduces",
    "α_flat + (N+1)/2·M/BW", "any N, any count, any root; all ranks on one node over shm");
constexpr algorithm broadcast_flat =
    flat_for(collective::broadcast,
             "the root writes its slot of the node's shared segment; every rank reads it",
             "α_flat + M/BW", "any N, any count, any root; all ranks on one node over shm");

}  // namespace

std::vector<const algorithm*> family_flat() {
    return {&allreduce_flat, &reduce_flat, &broadcast_flat};
}

}  // namespace loom::algorithms
