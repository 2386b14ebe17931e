// SPDX-License-Identifier: Apache-2.0
// Verifier pass 3 and 5: the symbolic run (rendezvous semantics), deadlock reporting,
// lockstep statistics; the output check lives in verify_outputs.cc.
#include "verifier.hh"

#include <algorithm>

#include "base/check.hh"
#include "verifier_internal.hh"

namespace loom::schedule {
namespace detail {
namespace {

using symbolic::piece;

struct transfer_record {
    int round;
    int src, dst;
    int64_t bytes;
};

struct slot_state {
    int expected  = 0;  // pushes across all ranks
    int pushed    = 0;
    int round     = 0;  // the round in which the last push landed
    int64_t count = -1;
    std::vector<piece> value;
    std::vector<step_ref> waiting_pulls;
};

class executor {
  public:
    explicit executor(run_state& st) : st_(st), s_(st.s) {}
    status run();
    const std::vector<transfer_record>& transfers() const { return transfers_; }

  private:
    void init();
    status on_ready(int r, step_id i);
    void complete(int r, step_id i, int round);
    status fire_transfer(int r, step_id i);
    status fire_push(int r, step_id i);
    status fire_pull(int r, step_id i);
    status apply_local(int r, step_id i);
    status reduce_into(int r, step_id i, const region& dst, std::vector<piece>& a,
                       std::vector<piece>& b);
    status report_deadlock();
    symbolic::value_map& buf(int r, buffer_id b) { return st_.buffers[r][static_cast<int>(b) - 1]; }

    run_state& st_;
    const schedule& s_;
    bool values_ = true;
    std::vector<std::vector<uint16_t>> waiting_;  // unfinished dependencies
    std::vector<std::vector<int>> ready_round_;   // -1 until ready
    std::vector<std::vector<uint8_t>> done_;
    std::vector<step_ref> worklist_;
    std::unordered_map<uint32_t, slot_state> slots_;
    std::vector<transfer_record> transfers_;
    std::vector<piece> p1_, p2_, p3_;
};

void executor::init() {
    int n   = s_.info.nranks;
    values_ = st_.options.check_values;
    waiting_.resize(n);
    ready_round_.resize(n);
    done_.resize(n);
    st_.dependents_begin.resize(n);
    st_.dependents.resize(n);
    if (values_) {
        st_.buffers.assign(n, std::vector<symbolic::value_map>(3));
    }
    for (int r = 0; r < n; ++r) {
        const auto& rs = s_.ranks[r];
        size_t m       = rs.steps.size();
        waiting_[r].resize(m);
        ready_round_[r].assign(m, -1);
        done_[r].assign(m, 0);
        auto& begin = st_.dependents_begin[r];
        auto& list  = st_.dependents[r];
        begin.assign(m + 1, 0);
        for (const auto& step : rs.steps) {
            for (int d = 0; d < step.ndeps; ++d) {
                ++begin[rs.deps_of(step)[d] + 1];
            }
        }
        for (size_t i = 0; i < m; ++i) {
            begin[i + 1] += begin[i];
        }
        list.resize(begin[m]);
        std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
        for (step_id i = 0; i < m; ++i) {
            const step& step = rs.steps[i];
            waiting_[r][i]   = step.ndeps;
            for (int d = 0; d < step.ndeps; ++d) {
                list[fill[rs.deps_of(step)[d]]++] = i;
            }
            if (step.kind == step_kind::inc_push) {
                slots_[step.tag].expected++;
            }
        }
        if (values_) {
            buf(r, buffer_id::input).reset(input_count(s_.info, r), st_.sets.singleton(r));
            buf(r, buffer_id::output).reset(output_count(s_.info, r), symbolic::undefined);
            buf(r, buffer_id::scratch).reset(rs.scratch_count, symbolic::undefined);
        }
    }
}

void executor::complete(int r, step_id i, int round) {
    done_[r][i]       = 1;
    const auto& begin = st_.dependents_begin[r];
    for (uint32_t k = begin[i]; k < begin[i + 1]; ++k) {
        step_id d          = st_.dependents[r][k];
        ready_round_[r][d] = std::max(ready_round_[r][d], round);
        if (--waiting_[r][d] == 0) {
            worklist_.push_back({r, d});
        }
    }
}

status executor::reduce_into(int r, step_id i, const region& dst, std::vector<piece>& a,
                             std::vector<piece>& b) {
    int64_t bad = 0;
    std::string why;
    if (!symbolic::combine(st_.sets, a, b, &p3_, &bad, &why)) {
        return verify_error(describe_step(s_, r, i) + " " + why + " at " +
                            describe_element(dst.buf, dst.offset + bad));
    }
    buf(r, dst.buf).write(dst.offset, p3_);
    return status::ok();
}

status executor::fire_transfer(int r, step_id i) {
    step_ref p = st_.partner[r][i];
    if (ready_round_[p.rank][p.index] < 0 || done_[p.rank][p.index] ||
        waiting_[p.rank][p.index] != 0) {
        return status::ok();  // the partner fires the pair when it becomes ready
    }
    bool i_send     = s_.ranks[r].steps[i].kind == step_kind::send;
    step_ref from   = i_send ? step_ref{r, i} : p;
    step_ref to     = i_send ? p : step_ref{r, i};
    const step& snd = s_.ranks[from.rank].steps[from.index];
    const step& rcv = s_.ranks[to.rank].steps[to.index];
    int round       = 1 + std::max(ready_round_[r][i], ready_round_[p.rank][p.index]);
    transfers_.push_back({round, from.rank, to.rank, snd.src.count * s_.info.dtype_size});
    if (values_) {
        buf(from.rank, snd.src.buf).read(snd.src.offset, snd.src.count, &p1_);
        if (rcv.kind == step_kind::recv_reduce) {
            buf(to.rank, rcv.src.buf).read(rcv.src.offset, rcv.src.count, &p2_);
            LOOM_CHECK(reduce_into(to.rank, to.index, rcv.dst, p2_, p1_));
        } else {
            buf(to.rank, rcv.dst.buf).write(rcv.dst.offset, p1_);
            if (rcv.kind == step_kind::recv_copy) {
                buf(to.rank, rcv.aux.buf).write(rcv.aux.offset, p1_);
            }
        }
    }
    complete(from.rank, from.index, round);
    complete(to.rank, to.index, round);
    return status::ok();
}

status executor::fire_push(int r, step_id i) {
    const step& st = s_.ranks[r].steps[i];
    slot_state& sl = slots_[st.tag];
    int round      = 1 + ready_round_[r][i];
    transfers_.push_back({round, r, -1, st.src.count * s_.info.dtype_size});
    if (sl.count >= 0 && sl.count != st.src.count) {
        return verify_error(describe_step(s_, r, i) + " pushes " + std::to_string(st.src.count) +
                            " elements into a slot that others fill with " +
                            std::to_string(sl.count));
    }
    if (st.peer != sl.expected) {
        return verify_error(describe_step(s_, r, i) + " expects " + std::to_string(st.peer) +
                            " contributors but the schedule pushes " + std::to_string(sl.expected) +
                            " into slot " + std::to_string(st.tag));
    }
    if (values_) {
        buf(r, st.src.buf).read(st.src.offset, st.src.count, &p1_);
        if (sl.count < 0) {
            sl.value = p1_;
        } else {
            int64_t bad = 0;
            std::string why;
            if (!symbolic::combine(st_.sets, sl.value, p1_, &p3_, &bad, &why)) {
                return verify_error(describe_step(s_, r, i) + " " + why + " at slot element " +
                                    std::to_string(bad));
            }
            sl.value = p3_;
        }
    }
    sl.count = st.src.count;
    sl.round = std::max(sl.round, round);
    ++sl.pushed;
    complete(r, i, round);
    if (sl.pushed == sl.expected) {
        for (step_ref w : sl.waiting_pulls) {
            worklist_.push_back(w);
        }
        sl.waiting_pulls.clear();
    }
    return status::ok();
}

status executor::fire_pull(int r, step_id i) {
    const step& st = s_.ranks[r].steps[i];
    auto it        = slots_.find(st.tag);
    if (it == slots_.end() || it->second.expected == 0) {
        return verify_error(describe_step(s_, r, i) + " pulls slot " + std::to_string(st.tag) +
                            ", which no rank pushes into");
    }
    slot_state& sl = it->second;
    if (sl.pushed < sl.expected) {
        sl.waiting_pulls.push_back({r, i});
        return status::ok();
    }
    if (sl.count != st.dst.count) {
        return verify_error(describe_step(s_, r, i) + " pulls " + std::to_string(st.dst.count) +
                            " elements from a slot of " + std::to_string(sl.count));
    }
    int round = 1 + std::max(ready_round_[r][i], sl.round);
    transfers_.push_back({round, -1, r, st.dst.count * s_.info.dtype_size});
    if (values_) {
        buf(r, st.dst.buf).write(st.dst.offset, sl.value);
    }
    complete(r, i, round);
    return status::ok();
}

status executor::apply_local(int r, step_id i) {
    const step& st = s_.ranks[r].steps[i];
    if (values_) {
        buf(r, st.src.buf).read(st.src.offset, st.src.count, &p1_);
        if (st.kind == step_kind::local_copy) {
            buf(r, st.dst.buf).write(st.dst.offset, p1_);
        } else {
            buf(r, st.aux.buf).read(st.aux.offset, st.aux.count, &p2_);
            LOOM_CHECK(reduce_into(r, i, st.dst, p1_, p2_));
        }
    }
    complete(r, i, ready_round_[r][i]);
    return status::ok();
}

status executor::on_ready(int r, step_id i) {
    if (done_[r][i]) {
        return status::ok();
    }
    ready_round_[r][i] = std::max(ready_round_[r][i], 0);
    switch (s_.ranks[r].steps[i].kind) {
        case step_kind::send:
        case step_kind::recv:
        case step_kind::recv_reduce:
        case step_kind::recv_copy:
            return fire_transfer(r, i);
        case step_kind::inc_push:
            return fire_push(r, i);
        case step_kind::inc_pull:
            return fire_pull(r, i);
        case step_kind::local_copy:
        case step_kind::local_reduce:
            return apply_local(r, i);
    }
    return internal_error("unknown step kind");
}

status executor::run() {
    init();
    for (int r = 0; r < s_.info.nranks; ++r) {
        for (step_id i = 0; i < s_.ranks[r].steps.size(); ++i) {
            if (waiting_[r][i] == 0) {
                worklist_.push_back({r, i});
            }
        }
    }
    while (!worklist_.empty()) {
        step_ref x = worklist_.back();
        worklist_.pop_back();
        LOOM_CHECK(on_ready(x.rank, x.index));
    }
    for (const auto& rank_done : done_) {
        if (std::find(rank_done.begin(), rank_done.end(), 0) != rank_done.end()) {
            return report_deadlock();
        }
    }
    return status::ok();
}

// Every unfinished step waits on something unfinished: a dependency, its transfer
// partner, or (a pull) the pushes of its slot. Walking those edges must revisit a step;
// the loop from the first revisit is the wait cycle.
status executor::report_deadlock() {
    step_ref cur{-1, 0};
    for (int r = 0; r < s_.info.nranks && cur.rank < 0; ++r) {
        for (step_id i = 0; i < s_.ranks[r].steps.size(); ++i) {
            if (!done_[r][i]) {
                cur = {r, i};
                break;
            }
        }
    }
    std::vector<step_ref> path;
    std::vector<std::string> why;
    std::unordered_map<uint64_t, size_t> position;
    auto key = [](step_ref x) { return (static_cast<uint64_t>(x.rank) << 32) | x.index; };
    while (position.find(key(cur)) == position.end()) {
        position[key(cur)] = path.size();
        path.push_back(cur);
        const auto& rs = s_.ranks[cur.rank];
        const step& st = rs.steps[cur.index];
        step_ref next{-1, 0};
        std::string reason;
        for (int d = 0; d < st.ndeps && next.rank < 0; ++d) {
            if (!done_[cur.rank][rs.deps_of(st)[d]]) {
                next   = {cur.rank, rs.deps_of(st)[d]};
                reason = "depends on";
            }
        }
        if (next.rank < 0 && is_transfer(st.kind)) {
            next   = st_.partner[cur.rank][cur.index];
            reason = "waits for its partner";
        }
        if (next.rank < 0 && st.kind == step_kind::inc_pull) {
            for (int r = 0; r < s_.info.nranks && next.rank < 0; ++r) {
                for (step_id i = 0; i < s_.ranks[r].steps.size(); ++i) {
                    const step& q = s_.ranks[r].steps[i];
                    if (!done_[r][i] && q.kind == step_kind::inc_push && q.tag == st.tag) {
                        next   = {r, i};
                        reason = "waits for the contribution of";
                        break;
                    }
                }
            }
        }
        if (next.rank < 0) {
            return verify_error("deadlock: " + describe_step(s_, cur.rank, cur.index) +
                                " never starts");
        }
        why.push_back(reason);
        cur = next;
    }
    size_t start    = position[key(cur)];
    std::string msg = "deadlock: wait cycle ";
    for (size_t k = start; k < path.size(); ++k) {
        msg += describe_step(s_, path[k].rank, path[k].index) + " " + why[k] + " ";
    }
    msg += describe_step(s_, cur.rank, cur.index);
    return verify_error(msg);
}

// Per round on a lattice: the longest route in hops and the busiest physical link.
class link_rounds {
  public:
    explicit link_rounds(const verify_options& o) : route_(o.route_links) {}
    bool active() const { return static_cast<bool>(route_); }
    void add(const transfer_record& t) {
        if (t.src < 0 || t.dst < 0) {
            return;
        }
        links_.clear();
        route_(t.src, t.dst, links_);
        hops_ = std::max<int64_t>(hops_, static_cast<int64_t>(links_.size()));
        for (uint64_t l : links_) {
            busiest_ = std::max(busiest_, load_[l] += t.bytes);
        }
    }
    void end_round(schedule_stats* out) {
        out->hop_rounds += static_cast<double>(hops_);
        out->link_bytes += static_cast<double>(busiest_);
        hops_ = busiest_ = 0;
        load_.clear();
    }

  private:
    const std::function<void(int, int, std::vector<uint64_t>&)>& route_;
    std::vector<uint64_t> links_;
    std::unordered_map<uint64_t, int64_t> load_;
    int64_t hops_ = 0, busiest_ = 0;
};

void collect_stats(const schedule& s, std::vector<transfer_record>& transfers, schedule_stats* out,
                   const verify_options& options) {
    bool pair_bytes = options.pair_bytes;
    link_rounds lattice(options);
    int n = s.info.nranks;
    out->per_rank.assign(n, {});
    for (int r = 0; r < n; ++r) {
        out->per_rank[r].steps = static_cast<int64_t>(s.ranks[r].steps.size());
        out->total_steps += out->per_rank[r].steps;
    }
    std::sort(transfers.begin(), transfers.end(),
              [](const transfer_record& a, const transfer_record& b) { return a.round < b.round; });
    std::vector<int64_t> out_bytes(n, 0), in_bytes(n, 0);
    std::vector<std::pair<int, int>> peers;  // (rank, peer) in this round
    std::vector<int> touched;
    size_t i = 0;
    while (i < transfers.size()) {
        int round    = transfers[i].round;
        int64_t edge = 0, port = 0;
        peers.clear();
        touched.clear();
        for (; i < transfers.size() && transfers[i].round == round; ++i) {
            const auto& t = transfers[i];
            edge          = std::max(edge, t.bytes);
            if (lattice.active()) {
                lattice.add(t);
            }
            for (int who : {t.src, t.dst}) {
                if (who >= 0) {
                    touched.push_back(who);
                }
            }
            if (t.src >= 0) {
                out_bytes[t.src] += t.bytes;
                port     = std::max(port, out_bytes[t.src]);
                auto& rs = out->per_rank[t.src];
                rs.bytes_sent += t.bytes;
                out->total_bytes += t.bytes;
                rs.sends++;
                if (t.dst >= 0) {
                    peers.push_back({t.src, t.dst});
                }
            }
            if (t.dst >= 0) {
                in_bytes[t.dst] += t.bytes;
                port     = std::max(port, in_bytes[t.dst]);
                auto& rs = out->per_rank[t.dst];
                rs.bytes_received += t.bytes;
                rs.receives++;
                if (t.src >= 0) {
                    peers.push_back({t.dst, t.src});
                }
            }
            if (pair_bytes && t.src >= 0 && t.dst >= 0) {
                out->pair_bytes[(static_cast<uint64_t>(t.src) << 32) | t.dst] += t.bytes;
            }
        }
        if (lattice.active()) {
            lattice.end_round(out);
        }
        out->rounds = std::max(out->rounds, round);
        out->edge_bytes += static_cast<double>(edge);
        out->port_bytes += static_cast<double>(port);
        std::sort(peers.begin(), peers.end());
        peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
        for (size_t a = 0; a < peers.size();) {
            size_t b = a;
            while (b < peers.size() && peers[b].first == peers[a].first) {
                ++b;
            }
            auto& rs                = out->per_rank[peers[a].first];
            rs.max_concurrent_peers = std::max(rs.max_concurrent_peers, static_cast<int>(b - a));
            a                       = b;
        }
        for (int who : touched) {
            out_bytes[who] = in_bytes[who] = 0;
        }
    }
}

// The passes in order; the first failure ends the run.
status run_passes(const schedule& s, const verify_options& options, schedule_stats* stats) {
    LOOM_CHECK(check_structure(s));
    run_state st(s, options);
    LOOM_CHECK(match_transfers(st));
    if (options.check_races) {
        LOOM_CHECK(check_races(s));
        stats->races_checked = true;
    }
    executor ex(st);
    LOOM_CHECK(ex.run());
    auto transfers = ex.transfers();
    collect_stats(s, transfers, stats, options);
    if (!options.check_values) {
        return status::ok();
    }
    stats->values_checked = true;
    return check_outputs(st);
}

}  // namespace
}  // namespace detail

verify_report verify(const schedule& s, const verify_options& options) {
    verify_report report;
    report.result = detail::run_passes(s, options, &report.stats);
    return report;
}

}  // namespace loom::schedule
