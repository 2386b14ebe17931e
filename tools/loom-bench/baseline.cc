// SPDX-License-Identifier: Apache-2.0
// --baseline: this run against an earlier --json file, point by point (collective,
// algorithm, type, op, root, half, bytes). A regression gate for scripts: exit 3 when a
// point got slower by more than the tolerance. Only the same experiment compares: a file of
// another one (ranks, transport, fabric, loom version, timing, iterations …, or no type and
// op in common) is refused with the difference named, exit 2, before anything is measured.
// Points on one side only are reported, never failures (a sweep may have grown, or loom may
// have gained an algorithm).
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/text_file.hh"
#include "bench.hh"

namespace loom::bench {
namespace {

bool same_point(const baseline_point& p, const row& r) {
    return p.collective == r.collective && p.algo == r.algo && p.bytes == r.bytes &&
           p.dtype == r.dtype && p.op == r.op && p.root == r.root && p.inplace == r.inplace;
}

std::string text_of(const nlohmann::json& j) {
    return j.is_string() ? j.get<std::string>() : j.dump();
}

// The experiment as the file states it; "" on success, else what is missing.
std::string read_experiment(const nlohmann::json& doc, experiment* e) {
    if (!doc.contains("experiment") || !doc["experiment"].is_object()) {
        return "it records no experiment (written by a loom-bench before the experiment was "
               "kept; rerun it with --json)";
    }
    const nlohmann::json& x = doc["experiment"];
    try {
        e->collective     = x.at("collective").get<std::string>();
        e->nranks         = x.at("nranks").get<int>();
        e->transport      = x.at("transport").get<std::string>();
        e->fabric         = x.at("fabric").get<std::string>();
        e->topology       = x.at("topology").get<std::string>();
        e->switch_address = x.at("switch").get<std::string>();
        e->algo_env       = x.at("algo_env").get<std::string>();
        e->progress       = x.at("progress").get<std::string>();
        e->loom_version   = x.at("loom_version").get<std::string>();
        e->timing         = x.at("timing").get<std::string>();
        e->iters          = x.at("iters").get<int>();
        e->warmup         = x.at("warmup").get<int>();
        e->average        = x.at("average").get<int>();
        e->check          = x.at("check").get<bool>();
    } catch (const nlohmann::json::exception& ex) {
        return std::string("its experiment is incomplete (") + ex.what() + ")";
    }
    return "";
}

}  // namespace

std::string load_baseline(const std::string& path, baseline* out) {
    int open_errno = 0;
    auto text      = read_text_file(path, "--baseline file", max_baseline_file_bytes, &open_errno);
    if (!text) {
        return open_errno != 0
                   ? "--baseline " + path + ": cannot open it (" + std::strerror(open_errno) + ")"
                   : text.error().message();
    }
    return parse_baseline(*text, path, out);
}

std::string parse_baseline(std::string_view text, const std::string& path, baseline* out) {
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        return "--baseline " + path + ": not JSON";
    }
    if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
        return "--baseline " + path +
               ": expected loom-bench --json output (an object with \"rows\")";
    }
    out->points.clear();
    for (const nlohmann::json& r : doc["rows"]) {
        if (!r.is_object() || !r.contains("collective") || !r["collective"].is_string() ||
            !r.contains("algo") || !r["algo"].is_string() || !r.contains("bytes") ||
            !r["bytes"].is_number_unsigned() || !r.contains("time_us") ||
            !r["time_us"].is_number() || !r.contains("dtype") || !r.contains("op") ||
            !r.contains("root") || !r["root"].is_number_integer() || !r.contains("inplace") ||
            !r["inplace"].is_boolean()) {
            return "--baseline " + path +
                   ": a row lacks collective, algo, bytes, dtype, op, root, inplace or time_us "
                   "(loom-bench --json writes them)";
        }
        baseline_point p;
        p.collective = r["collective"].get<std::string>();
        p.algo       = r["algo"].get<std::string>();
        p.dtype      = text_of(r["dtype"]);
        p.op         = text_of(r["op"]);
        p.root       = r["root"].get<int>();
        p.inplace    = r["inplace"].get<bool>();
        p.bytes      = r["bytes"].get<uint64_t>();
        p.time_us    = r["time_us"].get<double>();
        out->points.push_back(std::move(p));
    }
    if (std::string why = read_experiment(doc, &out->exp); !why.empty()) {
        return "--baseline " + path + ": " + why;
    }
    return "";
}

std::string baseline_mismatch(const baseline& base, const experiment& now, const options& o) {
    const experiment& was = base.exp;
    auto differ           = [](const char* what, const std::string& then, const std::string& here) {
        return std::string("--baseline: a different experiment (") + what + ": baseline " +
               (then.empty() ? "unset" : then) + ", this run " + (here.empty() ? "unset" : here) +
               "); compare like with like";
    };
    auto num = [](int v) { return std::to_string(v); };
    const std::pair<const char*, std::pair<std::string, std::string>> fields[] = {
        {"collective", {was.collective, now.collective}},
        {"ranks", {num(was.nranks), num(now.nranks)}},
        {"transport", {was.transport, now.transport}},
        {"LOOM_FABRIC", {was.fabric, now.fabric}},
        {"LOOM_TOPOLOGY", {was.topology, now.topology}},
        {"LOOM_SWITCH", {was.switch_address, now.switch_address}},
        {"LOOM_ALGO", {was.algo_env, now.algo_env}},
        {"LOOM_PROGRESS", {was.progress, now.progress}},
        {"loom version", {was.loom_version, now.loom_version}},
        {"timing (--timing)", {was.timing, now.timing}},
        {"iterations (-n)", {num(was.iters), num(now.iters)}},
        {"warm-up (-w)", {num(was.warmup), num(now.warmup)}},
        {"averaging (-a)", {num(was.average), num(now.average)}},
    };
    for (const auto& [what, values] : fields) {
        if (values.first != values.second) {
            return differ(what, values.first, values.second);
        }
    }
    // Types, ops and halves are per point; with none in common nothing would compare.
    bool common = false;
    for (const baseline_point& p : base.points) {
        for (loom_dtype_t d : o.dtypes) {
            for (loom_op_t op : o.ops) {
                common = common ||
                         (p.dtype == dtype_name(d) && (p.op == "none" || p.op == op_name(op)) &&
                          (p.inplace ? o.in_place : o.out_of_place));
            }
        }
    }
    if (!common && !base.points.empty()) {
        const baseline_point& p = base.points.front();
        return std::string("--baseline: a different experiment (baseline: dtype ") + p.dtype +
               ", op " + p.op + (p.inplace ? ", in place" : ", out of place") +
               "; this run measures none of that); compare like with like";
    }
    return "";
}

int compare_baseline(const baseline& base, const std::vector<row>& rows, double tolerance_pct,
                     bool print) {
    std::string slower_points;
    int slower = 0, faster = 0, missing = 0;
    if (print) {
        std::printf("#\n# against the baseline (time; tolerance %.3g%%)\n", tolerance_pct);
        std::printf("# %-14s  %-19s  %8s  %6s  %4s  %5s  %10s  %10s  %10s  %8s  %s\n", "collective",
                    "algo", "type", "redop", "root", "half", "size(B)", "base(us)", "now(us)",
                    "change", "verdict");
    }
    for (const row& r : rows) {
        const baseline_point* b = nullptr;
        for (const baseline_point& p : base.points) {
            if (same_point(p, r)) {
                b = &p;
            }
        }
        std::string algo = r.algo.empty() ? "-" : r.algo;
        const char* half = r.inplace ? "in" : "out";
        if (b == nullptr) {
            ++missing;
            if (print) {
                std::printf("  %-14s  %-19s  %8s  %6s  %4d  %5s  %10llu  %10s  %10.2f  %8s  %s\n",
                            r.collective.c_str(), algo.c_str(), r.dtype.c_str(), r.op.c_str(),
                            r.root, half, static_cast<unsigned long long>(r.bytes), "-", r.time_us,
                            "-", "not in baseline");
            }
            continue;
        }
        double change       = b->time_us > 0 ? (r.time_us / b->time_us - 1) * 100 : 0;
        const char* verdict = "same";
        if (change > tolerance_pct) {
            verdict = "SLOWER";
            ++slower;
            slower_points += (slower_points.empty() ? "" : ", ") + r.collective + " " + algo + " " +
                             r.dtype + " " + half + " " +
                             std::to_string(static_cast<unsigned long long>(r.bytes)) + " B";
        } else if (change < -tolerance_pct) {
            verdict = "faster";
            ++faster;
        }
        if (print) {
            std::printf(
                "  %-14s  %-19s  %8s  %6s  %4d  %5s  %10llu  %10.2f  %10.2f  %+7.1f%%  %s\n",
                r.collective.c_str(), algo.c_str(), r.dtype.c_str(), r.op.c_str(), r.root, half,
                static_cast<unsigned long long>(r.bytes), b->time_us, r.time_us, change, verdict);
        }
    }
    if (print) {
        std::printf("# baseline: %d slower, %d faster, %d within %.3g%%, %d not in the baseline\n",
                    slower, faster, static_cast<int>(rows.size()) - slower - faster - missing,
                    tolerance_pct, missing);
        if (slower > 0) {
            std::printf("# slower than the baseline: %s\n", slower_points.c_str());
        }
        std::fflush(stdout);
    }
    return slower > 0 ? exit_slower : exit_ok;
}

}  // namespace loom::bench
