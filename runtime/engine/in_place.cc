// SPDX-License-Identifier: Apache-2.0
// analyse_in_place (in_place.hh): ancestor bitsets over the reading steps, then every
// (writer, reader) pair whose bytes meet when the output lies on the input.
#include "engine/in_place.hh"

#include <algorithm>

namespace loom::engine {
namespace {

using schedule::step_kind;

// One input region a step reads (src or aux), or one output region it writes.
struct access {
    uint32_t step;
    buffer plan_step::*field;  // the step's buffer field, to repoint at input_aside
    int64_t lo, hi;            // bytes; a reader's in output coordinates (shifted)
};

bool reads_src(step_kind k) {
    return k == step_kind::send || k == step_kind::recv_reduce || k == step_kind::local_reduce ||
           k == step_kind::local_copy || k == step_kind::inc_push;
}

bool writes_dst(step_kind k) {
    return k == step_kind::recv || k == step_kind::recv_copy || k == step_kind::recv_reduce ||
           k == step_kind::local_reduce || k == step_kind::local_copy || k == step_kind::inc_pull;
}

// Reads and writes the same elements in one pass (the kernels and memmove allow it).
bool elementwise(step_kind k) {
    return k == step_kind::recv_reduce || k == step_kind::local_reduce ||
           k == step_kind::local_copy;
}

// The overlap loom.h calls in place: all-gather's input is this rank's block of the output.
int64_t canonical_shift(const schedule::schedule_info& info, int rank, int64_t elem) {
    if (info.coll != schedule::collective::allgather) {
        return 0;
    }
    return schedule::block_offset(info.count, info.nranks, rank) * elem;
}

}  // namespace

void analyse_in_place(const schedule::rank_schedule& rs, plan& p) {
    p.in_place_analysed = false;
    p.in_place_aside.clear();
    const int64_t shift = canonical_shift(p.info, p.rank, static_cast<int64_t>(p.element_bytes));
    std::vector<access> readers, writers;
    std::vector<int32_t> reader_bit(p.steps.size(), -1);  // a reading step's ancestor bit
    int32_t nbits = 0;
    for (uint32_t i = 0; i < p.steps.size(); ++i) {
        plan_step& s = p.steps[i];
        if (s.bytes <= 0) {
            continue;
        }
        auto read = [&](buffer plan_step::*f, int64_t off) {
            if (s.*f == buffer::input) {
                readers.push_back({i, f, off + shift, off + shift + s.bytes});
                if (reader_bit[i] < 0) {
                    reader_bit[i] = nbits++;
                }
            }
        };
        if (reads_src(s.kind)) {
            read(&plan_step::src_buf, s.src);
        }
        if (s.kind == step_kind::local_reduce) {
            read(&plan_step::aux_buf, s.aux);
        }
        if (writes_dst(s.kind) && s.dst_buf == buffer::output) {
            // A copy of the input onto itself writes nothing new (execute skips it).
            bool onto_itself = s.kind == step_kind::local_copy && s.src_buf == buffer::input &&
                               s.src + shift == s.dst;
            if (!onto_itself) {
                writers.push_back({i, &plan_step::dst_buf, s.dst, s.dst + s.bytes});
            }
        }
        if (s.kind == step_kind::recv_copy && s.aux_buf == buffer::output) {
            writers.push_back({i, &plan_step::aux_buf, s.aux, s.aux + s.bytes});
        }
    }
    p.in_place_shift = shift;
    if (readers.empty() || writers.empty()) {
        p.in_place_analysed = true;  // nothing read from the input, or nothing written on it
        return;
    }
    const auto words = static_cast<size_t>((nbits + 63) / 64);
    if (static_cast<int64_t>(p.steps.size()) * nbits > in_place_budget_bits ||
        static_cast<int64_t>(writers.size()) * static_cast<int64_t>(readers.size()) >
            in_place_budget_bits) {
        return;  // too large to analyse: the whole input is copied aside
    }
    // Ancestors among the reading steps; dependencies point backwards (step.hh).
    std::vector<uint64_t> ancestors(p.steps.size() * words, 0);
    for (uint32_t i = 0; i < p.steps.size(); ++i) {
        uint64_t* mine          = ancestors.data() + size_t{i} * words;
        const schedule::step& s = rs.steps[i];
        for (int d = 0; d < s.ndeps; ++d) {
            const uint32_t dep     = rs.deps_of(s)[d];
            const uint64_t* theirs = ancestors.data() + size_t{dep} * words;
            for (size_t w = 0; w < words; ++w) {
                mine[w] |= theirs[w];
            }
            if (reader_bit[dep] >= 0) {
                mine[reader_bit[dep] / 64] |= uint64_t{1} << (reader_bit[dep] % 64);
            }
        }
    }
    std::sort(readers.begin(), readers.end(),
              [](const access& a, const access& b) { return a.lo < b.lo; });
    std::vector<uint8_t> at_risk(readers.size(), 0);
    for (const access& w : writers) {
        const uint64_t* before = ancestors.data() + size_t{w.step} * words;
        for (size_t k = 0; k < readers.size() && readers[k].lo < w.hi; ++k) {
            const access& r = readers[k];
            if (r.hi <= w.lo) {
                continue;
            }
            if (r.step == w.step) {
                at_risk[k] |= !(elementwise(p.steps[r.step].kind) && r.lo == w.lo && r.hi == w.hi);
                continue;
            }
            const int32_t bit = reader_bit[r.step];
            at_risk[k] |= (before[bit / 64] >> (bit % 64) & 1) == 0;
        }
    }
    for (size_t k = 0; k < readers.size(); ++k) {
        if (at_risk[k]) {
            p.steps[readers[k].step].*readers[k].field = buffer::input_aside;
            p.in_place_aside.emplace_back(readers[k].lo - shift, readers[k].hi - shift);
        }
    }
    // Sorted by start already (readers were); merge what touches.
    auto& aside = p.in_place_aside;
    size_t kept = 0;
    for (size_t k = 0; k < aside.size(); ++k) {
        if (kept > 0 && aside[k].first <= aside[kept - 1].second) {
            aside[kept - 1].second = std::max(aside[kept - 1].second, aside[k].second);
        } else {
            aside[kept++] = aside[k];
        }
    }
    aside.resize(kept);
    p.in_place_analysed = true;
}

}  // namespace loom::engine
