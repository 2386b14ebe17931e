// SPDX-License-Identifier: Apache-2.0
// JSON form of a schedule (format "loom-schedule", version 1). Regions are
// [buffer, offset, count] with buffer "in" | "out" | "tmp".
//
//   {"format": "loom-schedule", "version": 1, "collective": "allreduce", "ranks": 2,
//    "count": 8, "root": 0, "dtype_size": 4,
//    "schedule": [{"rank": 0, "scratch": 0, "steps": [
//        {"kind": "send", "peer": 1, "src": ["in", 0, 8]},
//        {"kind": "recv_reduce", "peer": 1, "dst": ["out", 0, 8], "src": ["in", 0, 8]}]},
//      ...]}
//
// Parsing is strict: an unknown key, a wrong type or a missing field is an error that says
// where (rank, step, key); nothing is silently defaulted except the optional fields.
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/check.hh"
#include "schedule.hh"

namespace loom::schedule {
namespace {

using json = nlohmann::json;

json region_json(const region& r) {
    return json::array({buffer_name(r.buf), r.offset, r.count});
}

status parse_region(const json& j, region* out, const std::string& where) {
    if (!j.is_array() || j.size() != 3 || !j[0].is_string() || !j[1].is_number_integer() ||
        !j[2].is_number_integer()) {
        return parse_error(where + ": a region is [\"in\"|\"out\"|\"tmp\", offset, count]");
    }
    buffer_id buf;
    if (!parse_buffer(j[0].get<std::string>(), &buf)) {
        return parse_error(where + ": unknown buffer '" + j[0].get<std::string>() + "'");
    }
    if (j[1].is_number_unsigned() && j[1].get<uint64_t>() > uint64_t(max_region_count)) {
        return parse_error(where + ": region offset " + j[1].dump() + " is out of range");
    }
    if (j[2].is_number_unsigned() && j[2].get<uint64_t>() > uint64_t(max_region_count)) {
        return parse_error(where + ": region count " + j[2].dump() + " is out of range");
    }
    out->buf      = buf;
    out->offset   = j[1].get<int64_t>();
    int64_t count = j[2].get<int64_t>();
    if (count < 0 || count > max_region_count) {
        return parse_error(where + ": region count " + std::to_string(count) + " is out of range");
    }
    out->count = count;
    return status::ok();
}

// An integer that T holds exactly: a larger one is an error, never silently cut to T.
template <class T>
status get_int(const json& obj, const char* key, T* out, const std::string& where, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
        return required ? parse_error(where + ": missing \"" + key + "\"") : status::ok();
    }
    if (!it->is_number_integer()) {
        return parse_error(where + ": \"" + key + "\" must be an integer");
    }
    bool fits = it->is_number_unsigned()
                    ? it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                    : std::in_range<T>(it->get<int64_t>());
    if (!fits) {
        return parse_error(where + ": \"" + key + "\" is out of range: " + it->dump());
    }
    *out = it->get<T>();
    return status::ok();
}

status parse_step(const json& j, rank_schedule* rs, const std::string& where) {
    if (!j.is_object()) {
        return parse_error(where + ": a step is an object");
    }
    step s{};
    auto kind = j.find("kind");
    if (kind == j.end() || !kind->is_string() ||
        !parse_step_kind(kind->get<std::string>(), &s.kind)) {
        return parse_error(where +
                           ": \"kind\" must be one of send, recv, recv_reduce, "
                           "recv_copy, local_reduce, local_copy, inc_push, inc_pull");
    }
    std::vector<step_id> deps;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        status st;
        if (key == "kind") {
            continue;
        } else if (key == "peer") {
            st = get_int(j, "peer", &s.peer, where, true);
        } else if (key == "tag") {
            st = get_int(j, "tag", &s.tag, where, true);
        } else if (region* r = named_region(s, key)) {
            st = parse_region(*it, r, where + " " + key);
        } else if (key == "deps") {
            if (!it->is_array()) {
                return parse_error(where + ": \"deps\" must be an array of step indices");
            }
            for (const auto& d : *it) {
                if (!d.is_number_unsigned()) {
                    return parse_error(where + ": \"deps\" must hold non-negative integers");
                }
                if (d.get<uint64_t>() >= no_step) {
                    return parse_error(where + ": dependency " + d.dump() + " is out of range");
                }
                deps.push_back(d.get<step_id>());
            }
        } else {
            return parse_error(where + ": unknown key \"" + key + "\"");
        }
        if (!st) {
            return st;
        }
    }
    LOOM_CHECK(check_parsed_step(s, deps.size(), where));
    builder(*rs).add(s, deps);
    return status::ok();
}

status parse_document(const json& doc, schedule* s) {
    if (!doc.is_object() || doc.value("format", "") != "loom-schedule") {
        return parse_error("schedule JSON: expected an object with \"format\": \"loom-schedule\"");
    }
    // Compared as JSON, never converted: value("version", 0) turned a huge float into an int
    // (undefined behaviour).
    if (doc.value("version", json()) != 1) {
        return parse_error("schedule JSON: unsupported \"version\" (this build reads 1)");
    }
    auto& info = s->info;
    auto coll  = doc.find("collective");
    if (coll == doc.end() || !coll->is_string() ||
        !parse_collective(coll->get<std::string>(), &info.coll)) {
        return parse_error("schedule JSON: \"collective\" must name a collective");
    }
    const std::string w = "schedule JSON";
    for (auto st :
         {get_int(doc, "ranks", &info.nranks, w, true), get_int(doc, "count", &info.count, w, true),
          get_int(doc, "root", &info.root, w, false), get_int(doc, "peer", &info.peer, w, false),
          get_int(doc, "dtype_size", &info.dtype_size, w, false),
          get_int(doc, "segments", &info.segments, w, false),
          get_int(doc, "channels", &info.channels, w, false)}) {
        if (!st) {
            return st;
        }
    }
    for (auto [key, out] :
         {std::pair{"algorithm", &info.algorithm}, {"topology", &info.topology}}) {
        auto it = doc.find(key);
        if (it == doc.end()) {
            continue;
        }
        if (!it->is_string() || !(it->get_ref<const std::string&>().empty() ||
                                  is_plain_name(it->get_ref<const std::string&>()))) {
            return parse_error(w + ": \"" + key + "\" must be a name of printable characters");
        }
        *out = it->get<std::string>();
    }
    LOOM_CHECK(check_parsed_info(info, w));
    auto ranks = doc.find("schedule");
    if (ranks == doc.end() || !ranks->is_array()) {
        return parse_error("schedule JSON: \"schedule\" must be an array with one entry per rank");
    }
    for (const auto& jr : *ranks) {
        rank_schedule rs;
        rs.rank           = static_cast<int>(s->ranks.size());
        std::string where = "schedule JSON rank " + std::to_string(rs.rank);
        if (!jr.is_object() || !jr.contains("steps") || !jr["steps"].is_array()) {
            return parse_error(where + ": expected {\"rank\": r, \"steps\": [...]}");
        }
        int declared = rs.rank;
        LOOM_CHECK(get_int(jr, "rank", &declared, where, false));
        if (declared != rs.rank) {
            return parse_error(where + ": entries must be in rank order (found rank " +
                               std::to_string(declared) + ")");
        }
        LOOM_CHECK(get_int(jr, "scratch", &rs.scratch_count, where, false));
        if (rs.scratch_count < 0 || rs.scratch_count > max_region_count) {
            return parse_error(where + ": scratch " + std::to_string(rs.scratch_count) +
                               " is out of range");
        }
        for (const auto& js : jr["steps"]) {
            std::string sw = where + " step " + std::to_string(rs.steps.size());
            LOOM_CHECK(parse_step(js, &rs, sw));
        }
        s->ranks.push_back(std::move(rs));
    }
    return status::ok();
}

}  // namespace

std::string to_json(const schedule& s, int indent) {
    json doc;
    const auto& i     = s.info;
    doc["format"]     = "loom-schedule";
    doc["version"]    = 1;
    doc["collective"] = collective_name(i.coll);
    doc["ranks"]      = i.nranks;
    doc["count"]      = i.count;
    doc["root"]       = i.root;
    doc["peer"]       = i.peer;
    doc["dtype_size"] = i.dtype_size;
    doc["segments"]   = i.segments;
    doc["channels"]   = i.channels;
    doc["algorithm"]  = i.algorithm;
    doc["topology"]   = i.topology;
    json ranks        = json::array();
    for (const auto& rs : s.ranks) {
        json steps = json::array();
        for (const auto& st : rs.steps) {
            json j;
            j["kind"] = step_kind_name(st.kind);
            if (st.peer >= 0) {
                j["peer"] = st.peer;
            }
            if (st.tag) {
                j["tag"] = st.tag;
            }
            for (auto [key, r] : step_regions(st)) {
                if (r->buf != buffer_id::none) {
                    j[key] = region_json(*r);
                }
            }
            if (st.ndeps) {
                j["deps"] = std::vector<step_id>(rs.deps_of(st), rs.deps_of(st) + st.ndeps);
            }
            steps.push_back(std::move(j));
        }
        ranks.push_back({{"rank", rs.rank}, {"scratch", rs.scratch_count}, {"steps", steps}});
    }
    doc["schedule"] = std::move(ranks);
    // Replace, never throw: a schedule built in code may carry any bytes in its names.
    return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

result<schedule> parse_json(std::string_view text) {
    json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        return parse_error("schedule JSON: not valid JSON");
    }
    schedule s;
    try {
        LOOM_CHECK(parse_document(doc, &s));
    } catch (const json::exception& e) {
        // Out-of-range numbers and similar: still one clear line, never a crash.
        return parse_error(std::string("schedule JSON: ") + e.what());
    }
    return s;
}

}  // namespace loom::schedule
