// SPDX-License-Identifier: Apache-2.0
// Verifier passes 1, 2 and 4: structure, send/receive matching, races.
#include <algorithm>
#include <unordered_map>

#include "base/check.hh"
#include "verifier_internal.hh"

namespace loom::schedule::detail {

std::string describe_step(const schedule& s, int rank, step_id index) {
    std::string out = "rank " + std::to_string(rank) + " step " + std::to_string(index);
    if (rank < 0 || rank >= static_cast<int>(s.ranks.size()) ||
        index >= s.ranks[rank].steps.size()) {
        return out;
    }
    const step& st = s.ranks[rank].steps[index];
    out += " (" + std::string(step_kind_name(st.kind));
    if (st.kind == step_kind::send) {
        out += " to " + std::to_string(st.peer);
    } else if (is_receive(st.kind)) {
        out += " from " + std::to_string(st.peer);
    } else if (is_inc(st.kind)) {
        out += " slot " + std::to_string(st.tag);
    }
    return out + ")";
}

std::string describe_element(buffer_id b, int64_t pos) {
    return std::string(buffer_name(b)) + "[" + std::to_string(pos) + "]";
}

namespace {

int64_t buffer_size(const schedule& s, int rank, buffer_id b) {
    switch (b) {
        case buffer_id::input:
            return input_count(s.info, rank);
        case buffer_id::output:
            return output_count(s.info, rank);
        case buffer_id::scratch:
            return s.ranks[rank].scratch_count;
        case buffer_id::none:
            return 0;
    }
    return 0;
}

status check_region(const schedule& s, int rank, step_id i, const region& r, const char* role,
                    bool writes) {
    std::string where = describe_step(s, rank, i);
    if (r.buf == buffer_id::none) {
        return verify_error(where + ": needs a " + role + " region");
    }
    if (r.offset < 0 || r.count < 0) {
        return verify_error(where + ": " + role + " region has a negative offset or count");
    }
    int64_t size = buffer_size(s, rank, r.buf);
    if (r.end() > size) {
        return verify_error(where + ": " + role + " region " + std::string(buffer_name(r.buf)) +
                            "[" + std::to_string(r.offset) + ", " + std::to_string(r.end()) +
                            ") is out of bounds (the buffer holds " + std::to_string(size) +
                            " elements)");
    }
    if (writes && r.buf == buffer_id::input) {
        return verify_error(where + ": writes the input buffer, which is read-only");
    }
    return status::ok();
}

status check_step(const schedule& s, int rank, step_id i) {
    const auto& rs    = s.ranks[rank];
    const step& st    = rs.steps[i];
    int n             = s.info.nranks;
    std::string where = describe_step(s, rank, i);
    for (int d = 0; d < st.ndeps; ++d) {
        if (rs.deps_of(st)[d] >= i) {
            return verify_error(where + ": depends on step " + std::to_string(rs.deps_of(st)[d]) +
                                ", which is not an earlier step");
        }
    }
    if (is_transfer(st.kind) && (st.peer < 0 || st.peer >= n || st.peer == rank)) {
        return verify_error(where + ": peer " + std::to_string(st.peer) +
                            " is not another rank of 0.." + std::to_string(n - 1));
    }
    if (is_inc(st.kind) && (st.peer < 1 || st.peer > n)) {
        return verify_error(where + ": contributor count " + std::to_string(st.peer) +
                            " is outside 1.." + std::to_string(n));
    }
    auto same_count = [&](const region& a, const region& b) -> status {
        if (a.count != b.count) {
            return verify_error(where + ": operand regions differ in length (" +
                                std::to_string(a.count) + " vs " + std::to_string(b.count) + ")");
        }
        return status::ok();
    };
    status r;
    switch (st.kind) {
        case step_kind::send:
        case step_kind::inc_push:
            return check_region(s, rank, i, st.src, "source", false);
        case step_kind::recv:
        case step_kind::inc_pull:
            return check_region(s, rank, i, st.dst, "destination", true);
        case step_kind::recv_reduce:
        case step_kind::local_copy:
        case step_kind::recv_copy: {
            // recv_copy's second operand is a second destination; the others read a source.
            bool copy            = st.kind == step_kind::recv_copy;
            const region& second = copy ? st.aux : st.src;
            if (!(r = check_region(s, rank, i, st.dst, "destination", true)) ||
                !(r = check_region(s, rank, i, second, copy ? "second destination" : "source",
                                   copy))) {
                return r;
            }
            return same_count(st.dst, second);
        }
        case step_kind::local_reduce:
            for (auto [reg, role, w] :
                 {std::tuple{st.dst, "destination", true}, std::tuple{st.src, "source", false},
                  std::tuple{st.aux, "second source", false}}) {
                if (!(r = check_region(s, rank, i, reg, role, w))) {
                    return r;
                }
            }
            if (!(r = same_count(st.dst, st.src))) {
                return r;
            }
            return same_count(st.dst, st.aux);
    }
    return status::ok();
}

}  // namespace

status check_structure(const schedule& s) {
    const auto& info = s.info;
    if (info.nranks < 1) {
        return verify_error("the schedule has " + std::to_string(info.nranks) + " ranks");
    }
    if (static_cast<int>(s.ranks.size()) != info.nranks) {
        return verify_error("the header says " + std::to_string(info.nranks) +
                            " ranks but the schedule lists " + std::to_string(s.ranks.size()));
    }
    if (info.count < 0) {
        return verify_error("negative element count " + std::to_string(info.count));
    }
    if (has_root(info.coll) && (info.root < 0 || info.root >= info.nranks)) {
        return verify_error("root " + std::to_string(info.root) + " is outside 0.." +
                            std::to_string(info.nranks - 1));
    }
    if (info.coll == collective::sendrecv && (info.peer < 0 || info.peer >= info.nranks)) {
        return verify_error("sendrecv peer " + std::to_string(info.peer) + " is out of range");
    }
    for (int r = 0; r < info.nranks; ++r) {
        if (s.ranks[r].rank != r || s.ranks[r].scratch_count < 0) {
            return verify_error("rank entry " + std::to_string(r) + " is malformed");
        }
        for (step_id i = 0; i < s.ranks[r].steps.size(); ++i) {
            LOOM_CHECK(check_step(s, r, i));
        }
    }
    return status::ok();
}

status match_transfers(run_state& st) {
    const schedule& s = st.s;
    int n             = s.info.nranks;
    // For each rank: (peer, tag) -> its sends and its receives, in list order.
    std::vector<std::unordered_map<uint64_t, std::vector<step_id>>> sends(n), recvs(n);
    auto key = [](int peer, uint32_t tag) { return (static_cast<uint64_t>(peer) << 32) | tag; };
    st.partner.assign(n, {});
    for (int r = 0; r < n; ++r) {
        const auto& steps = s.ranks[r].steps;
        st.partner[r].assign(steps.size(), step_ref{-1, 0});
        for (step_id i = 0; i < steps.size(); ++i) {
            if (steps[i].kind == step_kind::send) {
                sends[r][key(steps[i].peer, steps[i].tag)].push_back(i);
            } else if (is_receive(steps[i].kind)) {
                recvs[r][key(steps[i].peer, steps[i].tag)].push_back(i);
            }
        }
    }
    for (int a = 0; a < n; ++a) {
        for (const auto& [k, list] : sends[a]) {
            int b       = static_cast<int>(k >> 32);
            auto tag    = static_cast<uint32_t>(k);
            auto it     = recvs[b].find(key(a, tag));
            size_t have = it == recvs[b].end() ? 0 : it->second.size();
            for (size_t j = 0; j < list.size(); ++j) {
                if (j >= have) {
                    return verify_error(
                        describe_step(s, a, list[j]) + ": send #" + std::to_string(j + 1) +
                        " to rank " + std::to_string(b) + " (tag " + std::to_string(tag) +
                        ") has no matching receive: rank " + std::to_string(b) + " posts " +
                        std::to_string(have) + " receive(s) from rank " + std::to_string(a));
                }
                step_id rj    = it->second[j];
                const step& x = s.ranks[a].steps[list[j]];
                const step& y = s.ranks[b].steps[rj];
                if (x.src.count != y.dst.count) {
                    return verify_error(describe_step(s, a, list[j]) + " sends " +
                                        std::to_string(x.src.count) +
                                        " elements but the matching " + describe_step(s, b, rj) +
                                        " expects " + std::to_string(y.dst.count));
                }
                st.partner[a][list[j]] = {b, rj};
                st.partner[b][rj]      = {a, list[j]};
            }
        }
    }
    for (int b = 0; b < n; ++b) {
        for (step_id i = 0; i < s.ranks[b].steps.size(); ++i) {
            if (is_receive(s.ranks[b].steps[i].kind) && st.partner[b][i].rank < 0) {
                return verify_error(describe_step(s, b, i) + " has no matching send from rank " +
                                    std::to_string(s.ranks[b].steps[i].peer));
            }
        }
    }
    return status::ok();
}

namespace {

struct access {
    buffer_id buf;
    int64_t begin, end;
    step_id step;
    bool write;
};

// Does `later` (transitively) depend on `earlier`? Dependencies point backwards, so the
// search never needs to look below `earlier`.
bool depends_on(const rank_schedule& rs, step_id later, step_id earlier,
                std::vector<uint32_t>& seen, uint32_t stamp, std::vector<step_id>& stack) {
    stack.clear();
    stack.push_back(later);
    while (!stack.empty()) {
        step_id x = stack.back();
        stack.pop_back();
        const step& s = rs.steps[x];
        for (int d = 0; d < s.ndeps; ++d) {
            step_id y = rs.deps_of(s)[d];
            if (y == earlier) {
                return true;
            }
            if (y > earlier && seen[y] != stamp) {
                seen[y] = stamp;
                stack.push_back(y);
            }
        }
    }
    return false;
}

}  // namespace

status check_races(const schedule& s) {
    std::vector<access> acc;
    std::vector<uint32_t> seen;
    std::vector<step_id> stack;
    uint32_t stamp = 0;
    for (const auto& rs : s.ranks) {
        acc.clear();
        auto add = [&](const region& r, step_id i, bool w) {
            if (r.buf != buffer_id::none && r.count > 0) {
                acc.push_back({r.buf, r.offset, r.end(), i, w});
            }
        };
        for (step_id i = 0; i < rs.steps.size(); ++i) {
            const step& st = rs.steps[i];
            add(st.src, i, false);
            add(st.dst, i, st.kind != step_kind::send && st.kind != step_kind::inc_push);
            add(st.aux, i, st.kind == step_kind::recv_copy);
        }
        std::sort(acc.begin(), acc.end(), [](const access& a, const access& b) {
            return a.buf != b.buf ? a.buf < b.buf : a.begin < b.begin;
        });
        seen.assign(rs.steps.size(), 0);
        stamp = 0;
        for (size_t i = 0; i < acc.size(); ++i) {
            for (size_t j = i + 1;
                 j < acc.size() && acc[j].buf == acc[i].buf && acc[j].begin < acc[i].end; ++j) {
                const access &a = acc[i], &b = acc[j];
                if (a.step == b.step || (!a.write && !b.write)) {
                    continue;
                }
                step_id lo = std::min(a.step, b.step), hi = std::max(a.step, b.step);
                if (!depends_on(rs, hi, lo, seen, ++stamp, stack)) {
                    int64_t pos = std::max(a.begin, b.begin);
                    return verify_error(describe_step(s, rs.rank, lo) + " and " +
                                        describe_step(s, rs.rank, hi) + " race on " +
                                        describe_element(a.buf, pos) +
                                        ": one writes what the other touches and neither "
                                        "depends on the other");
                }
            }
        }
    }
    return status::ok();
}

}  // namespace loom::schedule::detail
