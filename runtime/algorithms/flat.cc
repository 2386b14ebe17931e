// SPDX-License-Identifier: Apache-2.0
// Flat family: small all-reduce, reduce, broadcast, all-gather and all-to-all through one
// shared segment of the node (every rank of the communicator on one host over shm).
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
//   allgather: every rank writes its block once into its slot (aggregation slot = its
//              rank, one contributor) and reads every other rank's block straight into its
//              output; its own block is a local copy (none in place).
//   alltoall:  every rank writes the N-1 blocks it sends into its slot in one pass, block j
//              at word offset j·⌈B/4⌉ (aggregation slot i·N + j: writer i, reader j, one
//              contributor each), and reads block j of every other writer into output block
//              i; its own block is a local copy. The offload runs a call only once all its
//              steps are posted and writes before it reads, so in place is safe too.
//   Copy collectives use one aggregation slot per (writer, reader) block so that the
//   verifier's inc semantics (one contributor's value in the slot, pulled as is) describe
//   them exactly; the offload treats the steps of one call as one hand-off.
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
//   allgather: α_flat + (N-1)/N·M/BW (M the gathered vector: a reader copies the N-1 other
//              blocks, (N-1)·M_block, out of the writers' caches; the writer's own block is
//              M/N and written while the others write theirs).
//   alltoall:  α_flat + (N-1)/N·M/BW (M the send buffer: a reader copies N-1 blocks of M/N;
//              the writer's pass over its N-1 blocks runs alongside the others').
//   Both without a reduction, so the β of a copy out of another core's cache.
//
// Constraints
//   Any N ≥ 1, any count, any root, one channel (segments are ignored: one pair per call).
//   The runtime also needs every rank on one node over shm with the segment set up on all
//   of them, and the call's vector within the slot (node_local, tuner::admits): all-gather's
//   largest block ≤ LOOM_FLAT_MAX_BYTES; all-to-all's N blocks, each rounded up to whole
//   4-byte words, ≤ LOOM_FLAT_MAX_BYTES (a writer's N blocks share its one slot: at the
//   default 16 KiB, 2 KiB per block at N = 8; flat_offload.hh flat_fits).
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

// All-gather: slot `rank` holds this rank's block; every other block is pulled from its
// writer's slot.
status build_flat_allgather(const call& c, int rank, schedule::builder& b) {
    const int n = c.nranks;
    auto out_of = [&](int j) {
        return schedule::out(schedule::block_offset(c.count, n, j),
                             schedule::block_size(c.count, n, j));
    };
    const int64_t mine = schedule::block_size(c.count, n, rank);
    b.local_copy(out_of(rank), schedule::in(0, mine));
    if (n == 1) {
        return status::ok();
    }
    b.inc_push(schedule::in(0, mine), uint32_t(rank), 1);
    for (int j = 0; j < n; ++j) {
        if (j != rank) {
            b.inc_pull(out_of(j), uint32_t(j), 1);
        }
    }
    return status::ok();
}

// All-to-all: slot i·N + j carries writer i's block for reader j.
status build_flat_alltoall(const call& c, int rank, schedule::builder& b) {
    const int n       = c.nranks;
    const int64_t blk = c.count;
    b.local_copy(schedule::out(rank * blk, blk), schedule::in(rank * blk, blk));
    for (int j = 0; j < n; ++j) {
        if (j != rank) {
            b.inc_push(schedule::in(j * blk, blk), uint32_t(rank * n + j), 1);
        }
    }
    for (int i = 0; i < n; ++i) {
        if (i != rank) {
            b.inc_pull(schedule::out(i * blk, blk), uint32_t(i * n + rank), 1);
        }
    }
    return status::ok();
}

cost cost_flat(const cost_query& q) {
    cost k;
    k.n_alpha_flat = 1;
    const double n = q.nranks;
    switch (q.coll) {
        case collective::broadcast:
            k.n_beta = 1;
            break;
        case collective::allgather:
        case collective::alltoall:
            k.n_beta = (n - 1) / n;
            break;
        default:
            k.n_beta = (n + 1) / 2;
            break;
    }
    k.note = "node-local: α_flat per hand-off through the shared segment; reads from cache";
    return k;
}

constexpr algorithm flat_for(collective coll, std::string_view summary, std::string_view formula,
                             std::string_view constraints,
                             status (*build)(const call&, int, schedule::builder&) = build_flat) {
    return {"flat", coll,      summary, formula, constraints, flat_applicable,
            build,  cost_flat, false,   false,   false,       true};
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

constexpr algorithm allgather_flat =
    flat_for(collective::allgather,
             "every rank writes its block into its slot of the node's shared segment once; every "
             "rank reads the other blocks straight into its output",
             "α_flat + (N−1)/N·M/BW",
             "any N, any count; all ranks on one node over shm; largest block ≤ "
             "LOOM_FLAT_MAX_BYTES",
             build_flat_allgather);
constexpr algorithm alltoall_flat =
    flat_for(collective::alltoall,
             "every rank writes its N−1 outgoing blocks into its slot of the node's shared "
             "segment in one pass; rank j reads block j of every writer",
             "α_flat + (N−1)/N·M/BW",
             "any N, any count; all ranks on one node over shm; N blocks (each rounded up to 4 "
             "bytes) ≤ LOOM_FLAT_MAX_BYTES",
             build_flat_alltoall);

}  // namespace

std::vector<const algorithm*> family_flat() {
    return {&allreduce_flat, &reduce_flat, &broadcast_flat, &allgather_flat, &alltoall_flat};
}

}  // namespace loom::algorithms
