// SPDX-License-Identifier: Apache-2.0
// Verifier pass 5: every output element holds what the primitive requires
// (collective.hh conventions). An expectation is "positions [lo, hi) of rank r's output hold
// the reduction over SET of input_j[p + shift]".
#include "verifier_internal.hh"

namespace loom::schedule::detail {
namespace {

struct expectation {
    int64_t lo, hi;
    int64_t shift;
    symbolic::set_id set;
    std::string what;  // "the sum over all ranks", "rank 3's block" ...
};

std::vector<expectation> expected_output(run_state& st, int r) {
    const auto& info = st.s.info;
    int n            = info.nranks;
    int64_t count    = info.count;
    std::vector<expectation> ex;
    switch (info.coll) {
        case collective::allreduce:
            ex.push_back({0, count, 0, st.sets.full(n), "the reduction over all ranks"});
            break;
        case collective::reduce:
            if (r == info.root) {
                ex.push_back({0, count, 0, st.sets.full(n), "the reduction over all ranks"});
            }
            break;
        case collective::broadcast:
            ex.push_back({0, count, 0, st.sets.singleton(info.root), "the root's input"});
            break;
        case collective::reduce_scatter:
            ex.push_back({0, block_size(count, n, r), block_offset(count, n, r), st.sets.full(n),
                          "the reduction over all ranks of block " + std::to_string(r)});
            break;
        case collective::allgather:
            for (int j = 0; j < n; ++j) {
                int64_t off = block_offset(count, n, j);
                ex.push_back({off, off + block_size(count, n, j), -off, st.sets.singleton(j),
                              "rank " + std::to_string(j) + "'s block"});
            }
            break;
        case collective::alltoall:
            for (int j = 0; j < n; ++j) {
                ex.push_back(
                    {j * count, (j + 1) * count, (r - j) * count, st.sets.singleton(j),
                     "rank " + std::to_string(j) + "'s block for rank " + std::to_string(r)});
            }
            break;
        case collective::sendrecv:
            if (r == info.peer) {
                ex.push_back({0, count, 0, st.sets.singleton(info.root), "the source's input"});
            }
            break;
    }
    return ex;
}

std::string describe_value(run_state& st, const symbolic::segment& seg, int64_t pos) {
    if (seg.set == symbolic::undefined) {
        return "nothing (never written)";
    }
    return "ranks " + st.sets.describe(seg.set) + " of input element " +
           std::to_string(pos + seg.shift);
}

}  // namespace

status check_outputs(run_state& st) {
    for (int r = 0; r < st.s.info.nranks; ++r) {
        const auto& out = st.buffers[r][static_cast<int>(buffer_id::output) - 1];
        for (const auto& e : expected_output(st, r)) {
            int64_t p = e.lo;
            while (p < e.hi) {
                int64_t start                = 0;
                const symbolic::segment& seg = out.at(p, &start);
                if (seg.set != e.set || seg.shift != e.shift) {
                    return verify_error("rank " + std::to_string(r) + " " +
                                        describe_element(buffer_id::output, p) + " holds " +
                                        describe_value(st, seg, p) + " but must hold " + e.what +
                                        " (ranks " + st.sets.describe(e.set) +
                                        " of input element " + std::to_string(p + e.shift) + ")");
                }
                p = seg.end;
            }
        }
    }
    return status::ok();
}

}  // namespace loom::schedule::detail
