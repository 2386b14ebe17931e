// SPDX-License-Identifier: Apache-2.0
// Compiling a rank's steps into ops (program.hh).
#include "program.hh"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

namespace loom::sim::detail {

namespace {

constexpr size_t huge_page = size_t{2} << 20;
// Chunks start small (a few-rank run should not reserve, or under MALLOC_PERTURB_ write,
// megabytes) and double up to 64 MiB (a 4096-rank ring all-reduce then takes ~35 chunks).
constexpr size_t first_chunk = size_t{64} << 10;
constexpr size_t max_chunk   = size_t{64} << 20;

// The elements a step moves or writes: a send's or push's source, anything else's
// destination.
int64_t step_count(const schedule::step& s) {
    using schedule::step_kind;
    return (s.kind == step_kind::send || s.kind == step_kind::inc_push) ? s.src.count : s.dst.count;
}

constexpr uint32_t far_bit   = 1u << 31;  // compile scratch: a dependent ≥ 65536 steps ahead
constexpr uint32_t max_delta = 0xffff;

}  // namespace

arena::~arena() {
    for (void* c : chunks_) {
        std::free(c);
    }
}

op* arena::take(size_t n) {
    size_t bytes = (n * sizeof(op) + 63) & ~size_t{63};  // each rank on its own cache lines
    if (bytes > left_) {
        size_t size = std::max(bytes, std::min(max_chunk, first_chunk << chunks_.size()));
        // Chunks of 2 MiB and more are whole huge pages, aligned to them.
        size_t align = size >= huge_page ? huge_page : 64;
        size         = (size + align - 1) & ~(align - 1);
        void* c      = std::aligned_alloc(align, size);
        if (c == nullptr) {
            return nullptr;
        }
        if (align == huge_page) {
            // A hint: without transparent huge pages the run is only slower.
            (void)madvise(c, size, MADV_HUGEPAGE);
        }
        chunks_.push_back(c);
        next_ = static_cast<char*>(c);
        left_ = size;
    }
    op* out = reinterpret_cast<op*>(next_);
    next_ += bytes;
    left_ -= bytes;
    return out;
}

int64_t rank_program::count_of(uint32_t i) const {
    if (ops[i].count != wide_count) {
        return ops[i].count;
    }
    auto it = std::lower_bound(wide.begin(), wide.end(), std::pair<uint32_t, int64_t>{i, 0});
    return it != wide.end() && it->first == i ? it->second : 0;
}

std::string describe_op(const rank_program& p, int rank, uint32_t i) {
    std::string out = "rank " + std::to_string(rank) + " step " + std::to_string(i);
    if (i >= p.size) {
        return out;
    }
    const op& o = p.ops[i];
    out += " (" + std::string(schedule::step_kind_name(o.kind));
    if (o.kind == schedule::step_kind::send) {
        out += " to " + std::to_string(o.peer);
    } else if (schedule::is_receive(o.kind)) {
        out += " from " + std::to_string(o.peer);
    }
    return out + ")";
}

status compile_rank(const schedule::rank_schedule& rs, int nranks, arena& mem, rank_program& out,
                    compile_scratch& scratch) {
    const size_t m = rs.steps.size();
    if (m >= no_pred) {
        return invalid_argument("rank " + std::to_string(rs.rank) + " has " + std::to_string(m) +
                                " steps; the simulator takes fewer than 2^32 per rank");
    }
    out.size = static_cast<uint32_t>(m);
    out.ops  = m > 0 ? mem.take(m) : nullptr;
    if (m > 0 && out.ops == nullptr) {
        return system_error("out of memory compiling rank " + std::to_string(rs.rank));
    }
    out.overflow.clear();
    out.wide.clear();
    scratch.seq.clear();
    std::vector<uint32_t>& deps = scratch.dependents;  // per op: dependents, | far_bit
    deps.assign(m, 0);
    for (size_t i = 0; i < m; ++i) {
        const schedule::step& s = rs.steps[i];
        op& o                   = out.ops[i];
        o                       = {s.peer, 0, s.tag, 0, no_pred, 0, s.ndeps, s.kind, 0};
        int64_t count           = step_count(s);
        if (count < 0) {
            return invalid_argument(describe_op(out, rs.rank, static_cast<uint32_t>(i)) +
                                    ": negative element count");
        }
        if (count >= wide_count) {
            o.count = wide_count;
            out.wide.push_back({static_cast<uint32_t>(i), count});
        } else {
            o.count = static_cast<uint32_t>(count);
        }
        if (schedule::is_transfer(s.kind)) {
            if (s.peer < 0 || s.peer >= nranks || s.peer == rs.rank) {
                return invalid_argument(describe_op(out, rs.rank, static_cast<uint32_t>(i)) +
                                        ": peer is not another rank of 0.." +
                                        std::to_string(nranks - 1));
            }
            // Sends and receives are numbered apart (bit 63), per (peer, tag).
            uint64_t key = (uint64_t{schedule::is_receive(s.kind)} << 63) |
                           (static_cast<uint64_t>(s.peer) << 32) | s.tag;
            o.seq = scratch.seq[key]++;
        }
        for (int d = 0; d < s.ndeps; ++d) {
            uint32_t dep = rs.deps_of(s)[d];
            if (dep >= i) {
                return invalid_argument(describe_op(out, rs.rank, static_cast<uint32_t>(i)) +
                                        ": depends on step " + std::to_string(dep) +
                                        ", which is not an earlier step");
            }
            deps[dep]++;
            if (i - dep > max_delta) {
                deps[dep] |= far_bit;
            }
        }
    }
    // Ops with more than two dependents or a far one get an overflow list.
    for (size_t i = 0; i < m; ++i) {
        uint32_t n = deps[i] & ~far_bit;
        if (n > 2 || (deps[i] & far_bit)) {
            out.ops[i].flags |= op_overflow;
            out.ops[i].deps = static_cast<uint32_t>(out.overflow.size());
            out.overflow.push_back(0);  // filled below
            out.overflow.resize(out.overflow.size() + n);
        }
    }
    for (size_t i = 0; i < m; ++i) {
        const schedule::step& s = rs.steps[i];
        for (int d = 0; d < s.ndeps; ++d) {
            op& parent = out.ops[rs.deps_of(s)[d]];
            if (parent.flags & op_overflow) {
                uint32_t* list      = out.overflow.data() + parent.deps;
                list[1 + list[0]++] = static_cast<uint32_t>(i);
            } else {
                uint32_t delta = static_cast<uint32_t>(i - rs.deps_of(s)[d]);
                parent.deps    = (parent.deps & 0xffff) == 0 ? delta : (parent.deps | delta << 16);
            }
        }
    }
    return status::ok();
}

}  // namespace loom::sim::detail
