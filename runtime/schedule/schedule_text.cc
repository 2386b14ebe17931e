// SPDX-License-Identifier: Apache-2.0
// Text form of a schedule: one header line, then per rank a "rank" line and one line per
// step, fields as key=value. Designed to be read by people and diffed; JSON is for tools.
//
//   loom-schedule 1
//   collective=allreduce ranks=4 count=1000 root=0 peer=0 dtype_size=4 segments=1 channels=1
//   algorithm=ring topology=star:4 rank 0 scratch=0
//     0 send peer=1 src=in@0+250
//     1 recv_reduce peer=3 dst=out@750+250 src=in@750+250 deps=0
#include <algorithm>
#include <charconv>
#include <sstream>

#include "base/check.hh"
#include "schedule.hh"

namespace loom::schedule {
namespace {

void print_region(std::ostringstream& out, const char* key, const region& r) {
    if (r.buf == buffer_id::none) {
        return;
    }
    out << ' ' << key << '=' << buffer_name(r.buf) << '@' << r.offset << '+' << r.count;
}

template <class T>
bool to_number(std::string_view s, T* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size();
}

bool parse_region(std::string_view s, region* out) {
    auto at = s.find('@'), plus = s.find('+');
    if (at == s.npos || plus == s.npos || plus < at) {
        return false;
    }
    buffer_id buf;
    int64_t count = 0;
    bool ok       = parse_buffer(s.substr(0, at), &buf) &&
              to_number(s.substr(at + 1, plus - at - 1), &out->offset) &&
              to_number(s.substr(plus + 1), &count);
    out->buf   = buf;
    out->count = count;
    return ok && count >= 0 && count <= max_region_count;
}

struct line_reader {
    std::istringstream in;
    int number = 0;
    std::string line;
    explicit line_reader(std::string_view text) : in(std::string(text)) {}
    bool next() {
        while (std::getline(in, line)) {
            ++number;
            auto first = line.find_first_not_of(" \t\r");
            if (first != std::string::npos && line[first] != '#') {
                return true;
            }
        }
        return false;
    }
    status error(const std::string& what) const {
        return parse_error("schedule text line " + std::to_string(number) + ": " + what);
    }
};

std::vector<std::string_view> split_words(std::string_view s) {
    constexpr std::string_view blanks = " \t\r";
    std::vector<std::string_view> words;
    size_t i = s.find_first_not_of(blanks);
    while (i != s.npos) {
        size_t end = std::min(s.find_first_of(blanks, i), s.size());
        words.push_back(s.substr(i, end - i));
        i = s.find_first_not_of(blanks, end);
    }
    return words;
}

status parse_header(const line_reader& lr, schedule_info* info) {
    for (auto w : split_words(lr.line)) {
        auto eq = w.find('=');
        if (eq == w.npos) {
            return lr.error("expected key=value, got '" + std::string(w) + "'");
        }
        auto key = w.substr(0, eq), val = w.substr(eq + 1);
        bool ok = true;
        if (key == "collective") {
            ok = parse_collective(val, &info->coll);
        } else if (key == "ranks") {
            ok = to_number(val, &info->nranks);
        } else if (key == "count") {
            ok = to_number(val, &info->count);
        } else if (key == "root") {
            ok = to_number(val, &info->root);
        } else if (key == "peer") {
            ok = to_number(val, &info->peer);
        } else if (key == "dtype_size") {
            ok = to_number(val, &info->dtype_size);
        } else if (key == "segments") {
            ok = to_number(val, &info->segments);
        } else if (key == "channels") {
            ok = to_number(val, &info->channels);
        } else if (key == "algorithm" || key == "topology") {
            ok = val == "-" || is_plain_name(val);
            (key == "algorithm" ? info->algorithm : info->topology) = val == "-" ? "" : val;
        } else {
            return lr.error("unknown header key '" + std::string(key) + "'");
        }
        if (!ok) {
            return lr.error("bad value for '" + std::string(key) + "': '" + std::string(val) + "'");
        }
    }
    return status::ok();
}

status parse_step_line(const line_reader& lr, rank_schedule* rs) {
    auto words   = split_words(lr.line);
    size_t index = 0;
    if (words.size() < 2 || !to_number(words[0], &index) || index != rs->steps.size()) {
        return lr.error("expected '<index> <kind> ...' with index " +
                        std::to_string(rs->steps.size()));
    }
    step s{};
    if (!parse_step_kind(words[1], &s.kind)) {
        return lr.error("unknown step kind '" + std::string(words[1]) + "'");
    }
    std::vector<step_id> deps;
    for (size_t i = 2; i < words.size(); ++i) {
        auto w  = words[i];
        auto eq = w.find('=');
        if (eq == w.npos) {
            return lr.error("expected key=value, got '" + std::string(w) + "'");
        }
        auto key = w.substr(0, eq), val = w.substr(eq + 1);
        bool ok = true;
        if (key == "peer") {
            ok = to_number(val, &s.peer);
        } else if (key == "tag") {
            ok = to_number(val, &s.tag);
        } else if (region* r = named_region(s, key)) {
            ok = parse_region(val, r);
        } else if (key == "deps") {
            size_t pos = 0;
            while (ok && pos <= val.size()) {
                auto comma = val.find(',', pos);
                step_id d  = 0;
                ok = to_number(val.substr(pos, comma == val.npos ? val.npos : comma - pos), &d) &&
                     d != no_step;
                deps.push_back(d);
                if (comma == val.npos) {
                    break;
                }
                pos = comma + 1;
            }
        } else {
            return lr.error("unknown step key '" + std::string(key) + "'");
        }
        if (!ok) {
            return lr.error("bad value for '" + std::string(key) + "': '" + std::string(val) + "'");
        }
    }
    LOOM_CHECK(
        check_parsed_step(s, deps.size(), "schedule text line " + std::to_string(lr.number)));
    builder(*rs).add(s, deps);
    return status::ok();
}

}  // namespace

std::string to_text(const schedule& s) {
    std::ostringstream out;
    const auto& i = s.info;
    out << "loom-schedule 1\n"
        << "collective=" << collective_name(i.coll) << " ranks=" << i.nranks << " count=" << i.count
        << " root=" << i.root << " peer=" << i.peer << " dtype_size=" << i.dtype_size
        << " segments=" << i.segments << " channels=" << i.channels
        << " algorithm=" << (i.algorithm.empty() ? "-" : i.algorithm)
        << " topology=" << (i.topology.empty() ? "-" : i.topology) << "\n";
    for (const auto& rs : s.ranks) {
        out << "rank " << rs.rank << " scratch=" << rs.scratch_count << "\n";
        for (size_t k = 0; k < rs.steps.size(); ++k) {
            const step& st = rs.steps[k];
            out << "  " << k << ' ' << step_kind_name(st.kind);
            if (st.peer >= 0) {
                out << " peer=" << st.peer;
            }
            if (st.tag != 0) {
                out << " tag=" << st.tag;
            }
            for (auto [key, r] : step_regions(st)) {
                print_region(out, key, *r);
            }
            if (st.ndeps) {
                out << " deps=";
                for (int d = 0; d < st.ndeps; ++d) {
                    out << (d ? "," : "") << rs.deps_of(st)[d];
                }
            }
            out << '\n';
        }
    }
    return out.str();
}

result<schedule> parse_text(std::string_view text) {
    line_reader lr(text);
    schedule s;
    if (!lr.next() || split_words(lr.line).size() != 2 ||
        split_words(lr.line)[0] != "loom-schedule" || split_words(lr.line)[1] != "1") {
        return lr.error("expected the first line 'loom-schedule 1'");
    }
    if (!lr.next()) {
        return lr.error("missing the header line");
    }
    LOOM_CHECK(parse_header(lr, &s.info));
    LOOM_CHECK(check_parsed_info(s.info, "schedule text line " + std::to_string(lr.number)));
    while (lr.next()) {
        auto words = split_words(lr.line);
        if (words[0] == "rank") {
            rank_schedule rs;
            if (words.size() < 2 || !to_number(words[1], &rs.rank) ||
                rs.rank != static_cast<int>(s.ranks.size())) {
                return lr.error("expected 'rank " + std::to_string(s.ranks.size()) + "'");
            }
            for (size_t i = 2; i < words.size(); ++i) {
                if (words[i].substr(0, 8) != "scratch=" ||
                    !to_number(words[i].substr(8), &rs.scratch_count) || rs.scratch_count < 0 ||
                    rs.scratch_count > max_region_count) {
                    return lr.error("bad rank attribute '" + std::string(words[i]) + "'");
                }
            }
            s.ranks.push_back(std::move(rs));
        } else if (s.ranks.empty()) {
            return lr.error("step before the first 'rank' line");
        } else
            LOOM_CHECK(parse_step_line(lr, &s.ranks.back()));
    }
    return s;
}

result<schedule> parse_any(std::string_view text) {
    auto first = text.find_first_not_of(" \t\r\n");
    if (first != text.npos && text[first] == '{') {
        return parse_json(text);
    }
    return parse_text(text);
}

}  // namespace loom::schedule
