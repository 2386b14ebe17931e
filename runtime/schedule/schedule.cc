// SPDX-License-Identifier: Apache-2.0
#include "schedule.hh"
#include "base/check.hh"

#include <algorithm>

namespace loom::schedule {
namespace {

// An enumerator's name from a table in the enumerators' order; "?" outside it.
template <class E, size_t N>
std::string_view name_in(const std::string_view (&names)[N], E e) {
    auto i = static_cast<size_t>(e);
    return i < N ? names[i] : "?";
}

// One side of a call: a rank's block where the collective is `blocked` on that side, a
// block per rank for all-to-all, else the whole vector.
int64_t side_count(const schedule_info& info, int rank, collective blocked) {
    if (info.coll == blocked) {
        return block_size(info.count, info.nranks, rank);
    }
    return info.coll == collective::alltoall ? info.count * info.nranks : info.count;
}

}  // namespace

std::string_view collective_name(collective c) {
    static constexpr std::string_view names[] = {
        "broadcast", "reduce", "allreduce", "reduce_scatter", "allgather", "alltoall", "sendrecv"};
    static_assert(std::size(names) == collective_count);
    return name_in(names, c);
}

bool parse_collective(std::string_view name, collective* out) {
    for (int i = 0; i < collective_count; ++i) {
        auto c = static_cast<collective>(i);
        if (collective_name(c) == name) {
            *out = c;
            return true;
        }
    }
    // Accept the dashed spelling too (reduce-scatter), as command lines often use it.
    if (name == "reduce-scatter") {
        *out = collective::reduce_scatter;
        return true;
    }
    return false;
}

bool is_reduction(collective c) {
    return c == collective::reduce || c == collective::allreduce || c == collective::reduce_scatter;
}

bool has_root(collective c) {
    return c == collective::broadcast || c == collective::reduce || c == collective::sendrecv;
}

bool is_receive(step_kind k) {
    return k == step_kind::recv || k == step_kind::recv_reduce || k == step_kind::recv_copy;
}
bool is_transfer(step_kind k) {
    return k == step_kind::send || is_receive(k);
}
bool is_inc(step_kind k) {
    return k == step_kind::inc_push || k == step_kind::inc_pull;
}

std::string_view step_kind_name(step_kind k) {
    static constexpr std::string_view names[] = {"send",      "recv",         "recv_reduce",
                                                 "recv_copy", "local_reduce", "local_copy",
                                                 "inc_push",  "inc_pull"};
    static_assert(std::size(names) == step_kind_count);
    return name_in(names, k);
}

bool parse_step_kind(std::string_view name, step_kind* out) {
    for (int i = 0; i < step_kind_count; ++i) {
        auto k             = static_cast<step_kind>(i);
        std::string_view n = step_kind_name(k);
        // Accept the dashed spelling (recv-reduce) as well as the underscore one.
        bool same = n.size() == name.size();
        for (size_t j = 0; same && j < n.size(); ++j) {
            char c = name[j] == '-' ? '_' : name[j];
            same   = c == n[j];
        }
        if (same) {
            *out = k;
            return true;
        }
    }
    return false;
}

region* named_region(step& s, std::string_view key) {
    return key == "dst" ? &s.dst : key == "src" ? &s.src : key == "aux" ? &s.aux : nullptr;
}

std::string_view buffer_name(buffer_id b) {
    static constexpr std::string_view names[] = {"none", "in", "out", "tmp"};
    static_assert(std::size(names) == 4);
    return name_in(names, b);
}

bool parse_buffer(std::string_view name, buffer_id* out) {
    if (name == "in" || name == "input") {
        *out = buffer_id::input;
    } else if (name == "out" || name == "output") {
        *out = buffer_id::output;
    } else if (name == "tmp" || name == "scratch") {
        *out = buffer_id::scratch;
    } else {
        return false;
    }
    return true;
}

int64_t input_count(const schedule_info& info, int rank) {
    return side_count(info, rank, collective::allgather);
}

int64_t output_count(const schedule_info& info, int rank) {
    return side_count(info, rank, collective::reduce_scatter);
}

bool is_plain_name(std::string_view name) {
    if (name.empty() || name == "-" || name.size() > max_name_length) {  // "-": none, in text
        return false;
    }
    for (char c : name) {
        if (c <= ' ' || c > '~') {  // controls, space, DEL and every non-ASCII byte
            return false;
        }
    }
    return true;
}

status check_parsed_info(const schedule_info& info, const std::string& where) {
    auto bad = [&](const char* key, int64_t value, const char* rule) {
        return parse_error(where + ": " + key + "=" + std::to_string(value) + " " + rule);
    };
    if (info.nranks < 1) {
        return bad("ranks", info.nranks, "must be at least 1");
    }
    if (info.count < 0 || info.count > max_region_count) {
        return bad("count", info.count,
                   ("must be in 0.." + std::to_string(max_region_count)).c_str());
    }
    if (info.dtype_size < 1) {
        return bad("dtype_size", info.dtype_size, "must be at least 1");
    }
    if (info.segments < 1) {
        return bad("segments", info.segments, "must be at least 1");
    }
    if (info.channels < 1) {
        return bad("channels", info.channels, "must be at least 1");
    }
    return status::ok();
}

status check_parsed_step(const step& s, size_t ndeps, const std::string& where) {
    if (s.peer < -1) {
        return parse_error(where + ": peer=" + std::to_string(s.peer) + " is negative");
    }
    if (ndeps > max_step_deps) {
        return parse_error(where + ": " + std::to_string(ndeps) + " dependencies, more than " +
                           std::to_string(max_step_deps));
    }
    for (const region* r : {&s.dst, &s.src, &s.aux}) {
        LOOM_CHECK(check_parsed_region(*r, where));
    }
    return status::ok();
}

status check_parsed_region(const region& r, const std::string& where) {
    if (r.buf != buffer_id::none && (r.offset < 0 || r.offset > max_region_count)) {
        return parse_error(where + ": region offset " + std::to_string(r.offset) +
                           " is outside 0.." + std::to_string(max_region_count));
    }
    return status::ok();
}

double payload_bytes(const schedule_info& info) {
    double elems = static_cast<double>(info.count);
    if (info.coll == collective::alltoall) {
        elems *= info.nranks;
    }
    return elems * info.dtype_size;
}

step_id builder::add(step s, deps_list deps) {
    s.first_dep = static_cast<uint32_t>(out_.deps.size());
    uint16_t n  = 0;
    for (step_id d : deps) {
        if (d != no_step) {
            out_.deps.push_back(d);
            ++n;
        }
    }
    s.ndeps = n;
    out_.steps.push_back(s);
    return static_cast<step_id>(out_.steps.size() - 1);
}

// Each step kind fills only the fields it uses (step.hh); the rest keep their defaults.
step_id builder::send(int peer, region src, deps_list deps, uint32_t tag) {
    return add({.kind = step_kind::send, .tag = tag, .peer = peer, .src = src}, deps);
}

step_id builder::recv(int peer, region dst, deps_list deps, uint32_t tag) {
    return add({.kind = step_kind::recv, .tag = tag, .peer = peer, .dst = dst}, deps);
}

step_id builder::recv_reduce(int peer, region dst, region src, deps_list deps, uint32_t tag) {
    return add({.kind = step_kind::recv_reduce, .tag = tag, .peer = peer, .dst = dst, .src = src},
               deps);
}

step_id builder::recv_copy(int peer, region dst, region aux, deps_list deps, uint32_t tag) {
    return add({.kind = step_kind::recv_copy, .tag = tag, .peer = peer, .dst = dst, .aux = aux},
               deps);
}

step_id builder::local_reduce(region dst, region src, region aux, deps_list deps) {
    return add({.kind = step_kind::local_reduce, .dst = dst, .src = src, .aux = aux}, deps);
}

step_id builder::local_copy(region dst, region src, deps_list deps) {
    return add({.kind = step_kind::local_copy, .dst = dst, .src = src}, deps);
}

step_id builder::inc_push(region src, uint32_t slot, int contributors, deps_list deps) {
    return add({.kind = step_kind::inc_push, .tag = slot, .peer = contributors, .src = src}, deps);
}

step_id builder::inc_pull(region dst, uint32_t slot, int contributors, deps_list deps) {
    return add({.kind = step_kind::inc_pull, .tag = slot, .peer = contributors, .dst = dst}, deps);
}

void builder::need_scratch(int64_t count) {
    out_.scratch_count = std::max(out_.scratch_count, count);
}

bool operator==(const step& a, const step& b) {
    return a.kind == b.kind && a.tag == b.tag && a.peer == b.peer && a.ndeps == b.ndeps &&
           a.dst == b.dst && a.src == b.src && a.aux == b.aux;
}

bool equal(const schedule& a, const schedule& b) {
    const auto &x = a.info, &y = b.info;
    if (x.coll != y.coll || x.nranks != y.nranks || x.count != y.count || x.root != y.root ||
        x.peer != y.peer || x.dtype_size != y.dtype_size || x.algorithm != y.algorithm ||
        x.topology != y.topology || x.segments != y.segments || x.channels != y.channels ||
        a.ranks.size() != b.ranks.size()) {
        return false;
    }
    for (size_t r = 0; r < a.ranks.size(); ++r) {
        const auto &p = a.ranks[r], &q = b.ranks[r];
        if (p.rank != q.rank || p.scratch_count != q.scratch_count ||
            p.steps.size() != q.steps.size()) {
            return false;
        }
        for (size_t i = 0; i < p.steps.size(); ++i) {
            const step &s = p.steps[i], &t = q.steps[i];
            if (!(s == t) || !std::equal(p.deps_of(s), p.deps_of(s) + s.ndeps, q.deps_of(t))) {
                return false;
            }
        }
    }
    return true;
}

}  // namespace loom::schedule
