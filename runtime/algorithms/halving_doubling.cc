// SPDX-License-Identifier: Apache-2.0
#include "halving_doubling.hh"

#include <algorithm>

#include "util.hh"

namespace loom::algorithms {

namespace {

// Blocks [first, first + nblocks) of a vector in natural order.
region block_range(vector_at v, const block_layout& l, int first, int nblocks) {
    return {v.offset + l.offset(first), l.bounds[first + nblocks] - l.offset(first), v.buf};
}

// Elements before rotated position p of position `me` (position p holds block (me+p) mod n).
int64_t rotated_offset(const block_layout& l, int me, int p) {
    int n = l.blocks();
    if (me + p <= n) {
        return l.bounds[me + p] - l.offset(me);
    }
    return l.total() - l.offset(me) + l.offset(me + p - n);
}

// Rotated positions [first, first + npos) of `rot`: one region, since first + npos <= n.
region rotated_range(vector_at rot, const block_layout& l, int me, int first, int npos) {
    int64_t begin = rotated_offset(l, me, first);
    return {rot.offset + begin, rotated_offset(l, me, first + npos) - begin, rot.buf};
}

// Blocks moved by a dissemination step at distance d over n members.
int dissemination_blocks(int n, int d) {
    return std::min(d, n - d);
}

}  // namespace

bool uses_rotation(int n) {
    return n > 1 && !is_pow2(n);
}

phase_end halving_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                                 const block_layout& blocks, vector_at in, vector_at acc,
                                 region final_dst, phase_end after, uint32_t tag) {
    int n = static_cast<int>(members.size());
    if (n == 1) {
        return {after.last_send, copy_after(b, final_dst, in.all(blocks.total()), after)};
    }
    // [lo, lo + 2d) is the block range this position still reduces; the partner at distance d
    // reduces the same range, so the two split it and each sends the half the other keeps.
    int lo            = 0;
    step_id prev_send = after.last_send, prev_recv = after.last_recv;
    for (int d = n / 2; d >= 1; d /= 2) {
        bool upper = (me & d) != 0;
        int keep = upper ? lo + d : lo, give = upper ? lo : lo + d;
        vector_at cur = d == n / 2 ? in : acc;  // the first step reads the input itself
        int partner   = members[me ^ d];
        prev_send = b.send(partner, block_range(cur, blocks, give, d), {prev_recv, prev_send}, tag);
        // At d = 1 the kept range is block `me`, now reduced over every member.
        region dst = d == 1 ? final_dst : block_range(acc, blocks, keep, d);
        prev_recv  = b.recv_reduce(partner, dst, block_range(cur, blocks, keep, d),
                                   {prev_recv, after.last_send}, tag);
        lo         = keep;
    }
    return {prev_send, prev_recv};
}

phase_end doubling_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                             const block_layout& blocks, region own, vector_at dst, phase_end after,
                             uint32_t tag) {
    int n        = static_cast<int>(members.size());
    step_id copy = place_own(b, own, dst.block(blocks, me), after);
    if (n == 1) {
        return {after.last_send, copy == no_step ? after.last_recv : copy};
    }
    // Before the step at distance d this position holds the d blocks of its aligned group
    // [me - me mod d, … + d); it swaps them for the partner's group.
    step_id prev_send = after.last_send, prev_recv = after.last_recv;
    for (int d = 1; d < n; d *= 2) {
        int mine = me / d * d, theirs = (me ^ d) / d * d;
        region from = d == 1 ? own : block_range(dst, blocks, mine, d);
        prev_send   = b.send(members[me ^ d], from, {prev_recv, prev_send}, tag);
        prev_recv   = b.recv(members[me ^ d], block_range(dst, blocks, theirs, d),
                             {prev_recv, after.last_send, copy}, tag);
    }
    return {prev_send, prev_recv};
}

phase_end dissemination_reduce_scatter(schedule::builder& b, const std::vector<int>& members,
                                       int me, const block_layout& blocks, vector_at in,
                                       vector_at rot, region final_dst, phase_end after,
                                       uint32_t tag) {
    int n = static_cast<int>(members.size());
    if (n == 1) {
        return {after.last_send, copy_after(b, final_dst, in.all(blocks.total()), after)};
    }
    // Rotate the input into scratch: blocks [me, n) first, then blocks [0, me).
    int64_t total = blocks.total(), split = blocks.offset(me);
    step_id head = copy_after(b, rotated_range(rot, blocks, me, 0, n - me),
                              {in.offset + split, total - split, in.buf}, after);
    step_id tail = no_step;
    if (me > 0) {
        tail = copy_after(b, rotated_range(rot, blocks, me, n - me, me), in.all(split), after);
    }
    // Before the step at distance d this position holds partial sums for rotated positions
    // [0, min(2d, n)). It sends [d, d + c) to me+d (for which they are positions [0, c)) and
    // reduces the same range of me-d into its own [0, c), c = min(d, n-d): afterwards it
    // holds [0, d). The reversed data flow of dissemination_allgather, so every contribution
    // arrives exactly once.
    step_id prev_send = after.last_send, prev_recv = no_step;
    for (int d = 1 << (ceil_log2(n) - 1); d >= 1; d /= 2) {
        int c      = dissemination_blocks(n, d);
        prev_send  = b.send(members[mod(me + d, n)], rotated_range(rot, blocks, me, d, c),
                            {head, tail, prev_recv, prev_send}, tag);
        region dst = d == 1 ? final_dst : rotated_range(rot, blocks, me, 0, c);
        prev_recv =
            b.recv_reduce(members[mod(me - d, n)], dst, rotated_range(rot, blocks, me, 0, c),
                          {head, tail, prev_recv}, tag);
    }
    return {prev_send, prev_recv};
}

phase_end dissemination_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                                  const block_layout& blocks, region own, vector_at rot,
                                  vector_at dst, phase_end after, uint32_t tag) {
    int n        = static_cast<int>(members.size());
    step_id copy = place_own(b, own, dst.block(blocks, me), after);
    if (n == 1) {
        return {after.last_send, copy == no_step ? after.last_recv : copy};
    }
    step_id seed = copy_after(b, rotated_range(rot, blocks, me, 0, 1), own, after);
    // Before the step at distance d this position holds rotated positions [0, d); it sends
    // [0, c) to me-d (where they land at [d, d + c)) and receives me+d's [0, c) into its own
    // [d, d + c), c = min(d, n-d).
    step_id prev_send = after.last_send, prev_recv = seed;
    for (int d = 1; d < n; d *= 2) {
        int c       = dissemination_blocks(n, d);
        region from = d == 1 ? own : rotated_range(rot, blocks, me, 0, c);
        prev_send   = b.send(members[mod(me - d, n)], from, {prev_recv, prev_send}, tag);
        prev_recv   = b.recv(members[mod(me + d, n)], rotated_range(rot, blocks, me, d, c),
                             {prev_recv, after.last_send}, tag);
    }
    // Un-rotate every block but our own: positions [1, n-me) are blocks [me+1, n), positions
    // [n-me, n) are blocks [0, me). Chained so that the phase ends in one step.
    step_id last = prev_recv;
    if (me + 1 < n) {
        last = b.local_copy(block_range(dst, blocks, me + 1, n - me - 1),
                            rotated_range(rot, blocks, me, 1, n - me - 1), {last, copy});
    }
    if (me > 0) {
        last = b.local_copy(block_range(dst, blocks, 0, me),
                            rotated_range(rot, blocks, me, n - me, me), {last, copy});
    }
    return {prev_send, last};
}

phase_end recursive_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                                   const block_layout& blocks, vector_at in, vector_at work,
                                   region final_dst, phase_end after, uint32_t tag) {
    if (uses_rotation(static_cast<int>(members.size()))) {
        return dissemination_reduce_scatter(b, members, me, blocks, in, work, final_dst, after,
                                            tag);
    }
    return halving_reduce_scatter(b, members, me, blocks, in, work, final_dst, after, tag);
}

phase_end recursive_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                              const block_layout& blocks, region own, vector_at rot, vector_at dst,
                              phase_end after, uint32_t tag) {
    if (uses_rotation(static_cast<int>(members.size()))) {
        return dissemination_allgather(b, members, me, blocks, own, rot, dst, after, tag);
    }
    return doubling_allgather(b, members, me, blocks, own, dst, after, tag);
}

}  // namespace loom::algorithms
