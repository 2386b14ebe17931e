// SPDX-License-Identifier: Apache-2.0
#include "symbolic.hh"

#include <algorithm>
#include <cassert>

namespace loom::schedule::symbolic {

set_table::set_table() {
    sets_.push_back({});  // id 0: undefined (the empty set)
    index_[""] = undefined;
}

set_id set_table::intern(intervals&& iv) {
    std::string key(reinterpret_cast<const char*>(iv.data()), iv.size() * sizeof(iv[0]));
    auto it = index_.find(key);
    if (it != index_.end()) {
        return it->second;
    }
    auto id = static_cast<set_id>(sets_.size());
    sets_.push_back(std::move(iv));
    index_.emplace(std::move(key), id);
    return id;
}

set_id set_table::singleton(int rank) {
    return intern({{rank, rank + 1}});
}
set_id set_table::full(int nranks) {
    return intern({{0, nranks}});
}

set_id set_table::unite(set_id a, set_id b) {
    if (a > b) {
        std::swap(a, b);
    }
    uint64_t key = (static_cast<uint64_t>(a) << 32) | b;
    auto it      = unions_.find(key);
    if (it != unions_.end()) {
        return it->second;
    }
    const intervals &x = sets_[a], &y = sets_[b];
    intervals all;
    all.reserve(x.size() + y.size());
    std::merge(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(all));
    intervals merged;
    set_id result = 0;
    for (const auto& iv : all) {
        if (!merged.empty() && iv.first < merged.back().second) {
            result = double_count;
            break;
        }
        if (!merged.empty() && iv.first == merged.back().second) {
            merged.back().second = iv.second;
        } else {
            merged.push_back(iv);
        }
    }
    if (result != double_count) {
        result = intern(std::move(merged));
    }
    unions_.emplace(key, result);
    return result;
}

int set_table::common_rank(set_id a, set_id b) const {
    for (const auto& p : sets_[a]) {
        for (const auto& q : sets_[b]) {
            int lo = std::max(p.first, q.first);
            if (lo < std::min(p.second, q.second)) {
                return lo;
            }
        }
    }
    return -1;
}

std::string set_table::describe(set_id id) const {
    if (id == undefined) {
        return "{} (never written)";
    }
    std::string out = "{";
    bool first      = true;
    for (const auto& [lo, hi] : sets_[id]) {
        out += first ? "" : ",";
        first = false;
        out += std::to_string(lo);
        if (hi - lo > 1) {
            out += "-" + std::to_string(hi - 1);
        }
    }
    return out + "}";
}

void value_map::reset(int64_t size, set_id initial) {
    map_.clear();
    if (size > 0) {
        map_.emplace(0, segment{size, 0, initial});
    }
}

const segment& value_map::at(int64_t p, int64_t* start) const {
    auto it = std::prev(map_.upper_bound(p));
    *start  = it->first;
    return it->second;
}

void value_map::read(int64_t offset, int64_t count, std::vector<piece>* out) const {
    out->clear();
    if (count <= 0) {
        return;
    }
    int64_t end = offset + count;
    auto it     = std::prev(map_.upper_bound(offset));
    for (; it != map_.end() && it->first < end; ++it) {
        int64_t b = std::max(it->first, offset), e = std::min(it->second.end, end);
        out->push_back({b - offset, e - offset, it->second.shift + offset, it->second.set});
    }
}

void value_map::split_at(int64_t p) {
    auto it = map_.upper_bound(p);
    if (it == map_.begin()) {
        return;
    }
    --it;
    if (it->first == p || it->second.end <= p) {
        return;
    }
    segment right{it->second.end, it->second.shift, it->second.set};
    it->second.end = p;
    map_.emplace(p, right);
}

void value_map::coalesce_around(int64_t lo, int64_t hi) {
    auto it = map_.lower_bound(lo);
    if (it != map_.begin()) {
        --it;
    }
    while (it != map_.end() && it->first <= hi) {
        auto next = std::next(it);
        if (next == map_.end()) {
            break;
        }
        if (next->second.shift == it->second.shift && next->second.set == it->second.set &&
            it->second.end == next->first) {
            it->second.end = next->second.end;
            map_.erase(next);
        } else {
            it = next;
        }
    }
}

void value_map::write(int64_t offset, const std::vector<piece>& pieces) {
    if (pieces.empty()) {
        return;
    }
    int64_t lo = offset + pieces.front().begin, hi = offset + pieces.back().end;
    split_at(lo);
    split_at(hi);
    map_.erase(map_.lower_bound(lo), map_.lower_bound(hi));
    for (const auto& pc : pieces) {
        map_.emplace(offset + pc.begin, segment{offset + pc.end, pc.rel_shift - offset, pc.set});
    }
    coalesce_around(lo, hi);
}

bool combine(set_table& sets, const std::vector<piece>& a, const std::vector<piece>& b,
             std::vector<piece>* out, int64_t* bad_pos, std::string* why) {
    out->clear();
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const piece &x = a[i], &y = b[j];
        int64_t lo = std::max(x.begin, y.begin), hi = std::min(x.end, y.end);
        if (lo < hi) {
            if (x.set == undefined || y.set == undefined) {
                *bad_pos = lo;
                *why     = "reduces an element that was never written";
                return false;
            }
            if (x.rel_shift != y.rel_shift) {
                *bad_pos = lo;
                *why     = "reduces misaligned elements (input element " +
                       std::to_string(lo + x.rel_shift) + " with input element " +
                       std::to_string(lo + y.rel_shift) + ")";
                return false;
            }
            set_id u = sets.unite(x.set, y.set);
            if (u == double_count) {
                *bad_pos = lo;
                *why     = "counts the contribution of rank " +
                       std::to_string(sets.common_rank(x.set, y.set)) + " twice";
                return false;
            }
            if (!out->empty() && out->back().end == lo && out->back().set == u &&
                out->back().rel_shift == x.rel_shift) {
                out->back().end = hi;
            } else {
                out->push_back({lo, hi, x.rel_shift, u});
            }
        }
        if (x.end == hi) {
            ++i;
        }
        if (y.end == hi) {
            ++j;
        }
    }
    return true;
}

}  // namespace loom::schedule::symbolic
