// SPDX-License-Identifier: Apache-2.0
#include "ring_patterns.hh"

#include <utility>

#include "util.hh"

namespace loom::algorithms {

std::vector<int> identity_members(int n) {
    std::vector<int> members(n);
    for (int i = 0; i < n; ++i) {
        members[i] = i;
    }
    return members;
}

block_layout block_layout::even(int64_t count, int n) {
    block_layout l;
    l.bounds.resize(n + 1);
    for (int b = 0; b <= n; ++b) {
        l.bounds[b] = b < n ? schedule::block_offset(count, n, b) : count;
    }
    return l;
}

block_layout block_layout::listed(std::vector<int64_t> offsets, std::vector<int64_t> sizes,
                                  int64_t total) {
    block_layout l;
    l.bounds = std::move(offsets);
    l.bounds.push_back(total);
    l.sizes = std::move(sizes);
    return l;
}

step_id copy_after(schedule::builder& b, region dst, region src, phase_end after) {
    return b.local_copy(dst, src, {after.last_send, after.last_recv});
}

step_id place_own(schedule::builder& b, region own, region mine, phase_end after) {
    return own == mine ? no_step : copy_after(b, mine, own, after);
}

phase_end ring_reduce_scatter(schedule::builder& b, const std::vector<int>& members, int me,
                              const block_layout& blocks, vector_at in, vector_at acc,
                              region final_dst, phase_end after, uint32_t tag) {
    int n = static_cast<int>(members.size());
    if (n == 1) {
        return {no_step, copy_after(b, final_dst, in.all(blocks.total()), after)};
    }
    int right = members[mod(me + 1, n)], left = members[mod(me - 1, n)];
    step_id prev_recv = after.last_recv, prev_send = after.last_send;
    for (int t = 1; t < n; ++t) {
        int send_block = mod(me - t, n), recv_block = mod(me - t - 1, n);
        auto send_from = t == 1 ? in.block(blocks, send_block) : acc.block(blocks, send_block);
        prev_send      = b.send(right, send_from, {prev_recv, prev_send}, tag);
        auto dst       = t == n - 1 ? final_dst : acc.block(blocks, recv_block);
        prev_recv      = b.recv_reduce(left, dst, in.block(blocks, recv_block),
                                       {t == 1 ? after.last_recv : prev_recv, after.last_send}, tag);
    }
    return {prev_send, prev_recv};
}

phase_end ring_allgather(schedule::builder& b, const std::vector<int>& members, int me,
                         const block_layout& blocks, region own, vector_at dst, phase_end after,
                         uint32_t tag) {
    int n        = static_cast<int>(members.size());
    step_id copy = place_own(b, own, dst.block(blocks, me), after);
    if (n == 1) {
        return {no_step, copy == no_step ? after.last_recv : copy};
    }
    int right = members[mod(me + 1, n)], left = members[mod(me - 1, n)];
    step_id prev_recv = after.last_recv, prev_send = after.last_send;
    for (int t = 1; t < n; ++t) {
        auto from = t == 1 ? own : dst.block(blocks, mod(me - t + 1, n));
        prev_send = b.send(right, from, {prev_recv, prev_send}, tag);
        // The receive after the copy: the copy may write the block the first receive
        // does not touch, but ordering them keeps every write to dst in one chain.
        prev_recv = b.recv(left, dst.block(blocks, mod(me - t, n)),
                           {t == 1 ? after.last_recv : prev_recv, after.last_send, copy}, tag);
    }
    return {prev_send, prev_recv};
}

phase_end chain_broadcast(schedule::builder& b, const std::vector<int>& members, int me,
                          int64_t count, int segments, vector_at src, vector_at dst,
                          phase_end after, uint32_t tag) {
    int n = static_cast<int>(members.size());
    phase_end end{after.last_send, after.last_recv};
    if (me == 0 && !(src.all(count) == dst.all(count))) {
        end.last_recv = copy_after(b, dst.all(count), src.all(count), after);
    }
    if (n == 1) {
        return end;
    }
    int next = me + 1 < n ? members[me + 1] : -1, prev = me > 0 ? members[me - 1] : -1;
    step_id prev_send = after.last_send, prev_recv = after.last_recv;
    for (int s = 0; s < segments; ++s) {
        region seg_src{src.offset + segment_offset(count, segments, s),
                       segment_size(count, segments, s), src.buf};
        region seg_dst{dst.offset + segment_offset(count, segments, s),
                       segment_size(count, segments, s), dst.buf};
        step_id got = no_step;
        if (prev >= 0) {
            got = prev_recv = b.recv(prev, seg_dst, {prev_recv}, tag);
        }
        if (next >= 0) {
            // Sends on one link go in order: each waits for the previous one.
            prev_send = b.send(next, me == 0 ? seg_src : seg_dst, {got, prev_send}, tag);
        }
    }
    if (prev >= 0) {
        end.last_recv = prev_recv;
    }
    if (next >= 0) {
        end.last_send = prev_send;
    }
    return end;
}

phase_end chain_reduce(schedule::builder& b, const std::vector<int>& members, int me, int64_t count,
                       int segments, vector_at in, vector_at acc, vector_at dst, phase_end after,
                       uint32_t tag) {
    int n = static_cast<int>(members.size());
    if (n == 1) {
        return {after.last_send, copy_after(b, dst.all(count), in.all(count), after)};
    }
    int toward_root = me > 0 ? members[me - 1] : -1, from_leaf = me + 1 < n ? members[me + 1] : -1;
    step_id prev_send = after.last_send, prev_recv = after.last_recv;
    for (int s = 0; s < segments; ++s) {
        int64_t off = segment_offset(count, segments, s), len = segment_size(count, segments, s);
        region seg_in{in.offset + off, len, in.buf};
        region out  = me == 0 ? region{dst.offset + off, len, dst.buf}
                              : region{acc.offset + off, len, acc.buf};
        step_id got = no_step;
        if (from_leaf >= 0) {
            got = prev_recv =
                b.recv_reduce(from_leaf, out, seg_in, {prev_recv, after.last_send}, tag);
        }
        if (toward_root >= 0) {
            prev_send = b.send(toward_root, from_leaf >= 0 ? out : seg_in, {got, prev_send}, tag);
        }
    }
    return {toward_root >= 0 ? prev_send : after.last_send,
            from_leaf >= 0 ? prev_recv : after.last_recv};
}

}  // namespace loom::algorithms
