// --baseline: this run's p50 against an earlier --json file's, point by point (collective,
// algorithm, bytes). A regression gate for scripts: exit 3 when a point got slower by more
// than the tolerance. Points on one side only are reported, never failures (a sweep may
// have grown, or loom may have gained an algorithm).
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/text_file.hh"
#include "bench.hh"

namespace loom::bench {

std::string load_baseline(const std::string& path, std::vector<baseline_point>* out) {
    int open_errno = 0;
    auto text      = read_text_file(path, "--baseline file", max_baseline_file_bytes, &open_errno);
    if (!text) {
        return open_errno != 0
                   ? "--baseline " + path + ": cannot open it (" + std::strerror(open_errno) + ")"
                   : text.error().message();
    }
    return parse_baseline(*text, path, out);
}

std::string parse_baseline(std::string_view text, const std::string& path,
                           std::vector<baseline_point>* out) {
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        return "--baseline " + path + ": not JSON";
    }
    if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
        return "--baseline " + path +
               ": expected loom-bench --json output (an object with \"rows\")";
    }
    out->clear();
    for (const nlohmann::json& r : doc["rows"]) {
        if (!r.is_object() || !r.contains("collective") || !r["collective"].is_string() ||
            !r.contains("algo") || !r["algo"].is_string() || !r.contains("bytes") ||
            !r["bytes"].is_number_unsigned() || !r.contains("p50_us") || !r["p50_us"].is_number()) {
            return "--baseline " + path +
                   ": a row lacks collective, algo, bytes or p50_us (loom-bench --json writes "
                   "them)";
        }
        out->push_back({r["collective"].get<std::string>(), r["algo"].get<std::string>(),
                        r["bytes"].get<uint64_t>(), r["p50_us"].get<double>()});
    }
    return "";
}

int compare_baseline(const std::vector<baseline_point>& base, const std::vector<row>& rows,
                     double tolerance_pct, bool print) {
    std::string slower_points;
    int slower = 0, faster = 0, missing = 0;
    if (print) {
        std::printf("#\n# against the baseline (p50; tolerance %.3g%%)\n", tolerance_pct);
        std::printf("# %-14s  %-19s  %10s  %10s  %10s  %8s  %s\n", "collective", "algo", "size(B)",
                    "base(us)", "now(us)", "change", "verdict");
    }
    for (const row& r : rows) {
        const baseline_point* b = nullptr;
        for (const baseline_point& p : base) {
            if (p.collective == r.collective && p.algo == r.algo && p.bytes == r.bytes) {
                b = &p;
            }
        }
        std::string algo = r.algo.empty() ? "-" : r.algo;
        if (b == nullptr) {
            ++missing;
            if (print) {
                std::printf("  %-14s  %-19s  %10llu  %10s  %10.2f  %8s  %s\n", r.collective.c_str(),
                            algo.c_str(), static_cast<unsigned long long>(r.bytes), "-", r.p50_us,
                            "-", "not in baseline");
            }
            continue;
        }
        double change       = b->p50_us > 0 ? (r.p50_us / b->p50_us - 1) * 100 : 0;
        const char* verdict = "same";
        if (change > tolerance_pct) {
            verdict = "SLOWER";
            ++slower;
            slower_points += (slower_points.empty() ? "" : ", ") + r.collective + " " + algo + " " +
                             std::to_string(static_cast<unsigned long long>(r.bytes)) + " B";
        } else if (change < -tolerance_pct) {
            verdict = "faster";
            ++faster;
        }
        if (print) {
            std::printf("  %-14s  %-19s  %10llu  %10.2f  %10.2f  %+7.1f%%  %s\n",
                        r.collective.c_str(), algo.c_str(),
                        static_cast<unsigned long long>(r.bytes), b->p50_us, r.p50_us, change,
                        verdict);
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
