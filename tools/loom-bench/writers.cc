// SPDX-License-Identifier: Apache-2.0
// The machine-readable outputs: --csv (one row per measured point and half), --json (the
// experiment and its rows; also what --baseline reads) and --plot (tools/common's gnuplot
// writer: the script beside the PNG, then gnuplot). Rank 0 writes them after the sweep, so
// nothing here runs while timing; check_output_paths runs before it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench.hh"
#include "comm/comm_params.hh"
#include "inc/inc_params.hh"
#include "routing/routing_params.hh"
#include "tools/common/gnuplot.hh"

namespace loom::bench {
namespace {

// inplace says which half a row is; time_us is the time column (timing_mode), p50_us and
// p99_us are empty unless timed by barrier.
constexpr const char* csv_header =
    "collective,nranks,algo,tuner_choice,bytes,count,dtype,op,root,inplace,mean_us,p50_us,"
    "p99_us,algbw_GBps,busbw_GBps,wrong,predicted_us,sent_bytes_per_rank,time_us";

std::string number(double v) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", v);
    return text;
}

std::string io_error(const std::string& path) {
    return "cannot write " + path + ": " + std::strerror(errno);
}

nlohmann::ordered_json row_json(const row& r) {
    nlohmann::ordered_json j;
    j["collective"] = r.collective;
    j["nranks"]     = r.nranks;
    j["algo"]       = r.algo;
    j["tuner_choice"] =
        r.tuner_choice < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.tuner_choice == 1);
    j["bytes"]      = r.bytes;
    j["count"]      = r.count;
    j["dtype"]      = r.dtype;
    j["op"]         = r.op;
    j["root"]       = r.root;
    j["inplace"]    = r.inplace;
    j["time_us"]    = r.time_us;
    j["mean_us"]    = r.mean_us;
    j["p50_us"]     = r.p50_us < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.p50_us);
    j["p99_us"]     = r.p99_us < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.p99_us);
    j["algbw_GBps"] = r.algbw;
    j["busbw_GBps"] = r.busbw;
    j["wrong"]      = r.wrong < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.wrong);
    j["predicted_us"] =
        r.predicted_us < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.predicted_us);
    j["sent_bytes_per_rank"] =
        r.sent_bytes < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.sent_bytes);
    return j;
}

// Whether `path` can be written without writing it: an existing file must be writable, a
// new one's folder must exist and take new files.
std::string writable(const char* flag, const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        return std::string(flag) + " " + path + ": a directory, not a file";
    }
    if (::access(path.c_str(), F_OK) == 0) {
        return ::access(path.c_str(), W_OK) == 0
                   ? ""
                   : std::string(flag) + " " + path + ": cannot write it (" + std::strerror(errno) +
                         ")";
    }
    size_t slash    = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        return std::string(flag) + " " + path + ": cannot create it in " + dir + " (" +
               std::strerror(errno) + ")";
    }
    return "";
}

}  // namespace

experiment describe_experiment(const options& o, int n) {
    experiment e;
    e.collective     = collective_name(o.coll);
    e.nranks         = n;
    e.transport      = comm::params::transport.get();
    e.transport      = !e.transport.empty() ? e.transport : n == 1 ? "self" : "shm";
    e.fabric         = routing::params::fabric.get();
    e.topology       = comm::params::topology.get();
    e.switch_address = inc::params::switch_address.get().empty() ? "" : "set";
    e.algo_env       = comm::params::algo.get();
    e.progress       = comm::params::progress.get();
    e.loom_version   = loom_version();
    e.timing         = o.timing == timing_mode::loop ? "loop" : "barrier";
    e.iters          = o.iters;
    e.warmup         = o.warmup;
    e.average        = o.timing == timing_mode::loop ? static_cast<int>(o.average) : -1;
    e.check          = o.check;
    return e;
}

run_info describe_run(const options& o, int n) {
    run_info info;
    info.exp          = describe_experiment(o, n);
    info.command_line = o.command_line;
    char host[256]    = {};
    if (gethostname(host, sizeof host - 1) == 0) {
        info.host = host;
    }
    char date[32]   = {};
    std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    info.date = date;
    return info;
}

std::string check_output_paths(const options& o) {
    std::string base = o.plot_path.empty() ? "" : o.plot_path.substr(0, o.plot_path.size() - 4);
    for (auto [flag, path] : {std::pair{"--csv", o.csv_path}, std::pair{"--json", o.json_path},
                              std::pair{"--plot", o.plot_path},
                              std::pair{"--plot", base.empty() ? "" : base + ".gp"}}) {
        if (!path.empty()) {
            if (std::string why = writable(flag, path); !why.empty()) {
                return why;
            }
        }
    }
    return "";
}

std::string write_csv(const std::string& path, const std::vector<row>& rows) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
        return io_error(path);
    }
    std::fprintf(f, "%s\n", csv_header);
    for (const row& r : rows) {
        // No field can hold a comma or a quote (names are loom's identifiers), so no quoting.
        std::fprintf(
            f, "%s,%d,%s,%s,%llu,%llu,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s\n",
            r.collective.c_str(), r.nranks, r.algo.c_str(),
            r.tuner_choice < 0    ? ""
            : r.tuner_choice == 1 ? "1"
                                  : "0",
            static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count),
            r.dtype.c_str(), r.op.c_str(), r.root, r.inplace ? 1 : 0, number(r.mean_us).c_str(),
            r.p50_us < 0 ? "" : number(r.p50_us).c_str(),
            r.p99_us < 0 ? "" : number(r.p99_us).c_str(), number(r.algbw).c_str(),
            number(r.busbw).c_str(),
            r.wrong < 0 ? "" : std::to_string(static_cast<long long>(r.wrong)).c_str(),
            r.predicted_us < 0 ? "" : number(r.predicted_us).c_str(),
            r.sent_bytes < 0 ? "" : number(r.sent_bytes).c_str(), number(r.time_us).c_str());
    }
    bool ok = std::fflush(f) == 0 && !std::ferror(f);
    ok      = std::fclose(f) == 0 && ok;
    return ok ? "" : io_error(path);
}

nlohmann::ordered_json experiment_json(const experiment& e) {
    nlohmann::ordered_json j;
    j["collective"]   = e.collective;
    j["nranks"]       = e.nranks;
    j["transport"]    = e.transport;
    j["fabric"]       = e.fabric;
    j["topology"]     = e.topology;
    j["switch"]       = e.switch_address;
    j["algo_env"]     = e.algo_env;
    j["progress"]     = e.progress;
    j["loom_version"] = e.loom_version;
    j["timing"]       = e.timing;
    j["iters"]        = e.iters;
    j["warmup"]       = e.warmup;
    j["average"]      = e.average;
    j["check"]        = e.check;
    return j;
}

std::string write_json(const std::string& path, const run_info& info,
                       const std::vector<row>& rows) {
    nlohmann::ordered_json doc;
    doc["collective"]   = info.exp.collective;
    doc["nranks"]       = info.exp.nranks;
    doc["transport"]    = info.exp.transport;
    doc["host"]         = info.host;
    doc["date"]         = info.date;
    doc["command_line"] = info.command_line;
    doc["experiment"]   = experiment_json(info.exp);
    doc["rows"]         = nlohmann::ordered_json::array();
    for (const row& r : rows) {
        doc["rows"].push_back(row_json(r));
    }
    std::ofstream out(path);
    out << doc.dump(2) << "\n";
    out.close();
    return out ? "" : io_error(path);
}

std::string write_plot(const std::string& png, const options& o, int n,
                       const std::vector<row>& rows, std::string* warning) {
    std::string gp = png.substr(0, png.size() - 4) + ".gp";  // options.cc insists on ".png"
    // A line per half, type, op and root measured (and algorithm under --algo all); loom's
    // prediction beside a single measured line.
    tools::plot_spec plot;
    plot.title = "loom-bench " + std::string(collective_name(o.coll)) +
                 ", N = " + std::to_string(n) + ", " + describe_experiment(o, n).transport +
                 ", loom " + loom_version();
    plot.xlabel = "size (bytes)";
    plot.ylabel =
        std::string("time per call (us, ") + (o.timing == timing_mode::loop ? "mean" : "p50") + ")";
    auto label = [&](const row& r) {
        // One line per algorithm only under --algo all: otherwise the tuner's choice may
        // change with the size, and the line is the measurement, whichever ran.
        std::string l = o.mode == algo_mode::all && !r.algo.empty() ? r.algo
                        : o.mode == algo_mode::named                ? o.algo
                                                                    : "measured";
        l += r.inplace ? " in place" : " out of place";
        if (o.dtypes.size() > 1) {
            l += " " + r.dtype;
        }
        if (o.ops.size() > 1) {
            l += " " + r.op;
        }
        if (o.roots.size() > 1) {
            l += " root " + std::to_string(r.root);
        }
        return l;
    };
    for (const row& r : rows) {
        std::string l = label(r);
        auto line     = std::find_if(plot.series.begin(), plot.series.end(),
                                     [&](const tools::plot_series& s) { return s.title == l; });
        if (line == plot.series.end()) {
            plot.series.push_back({l, {}});
            line = plot.series.end() - 1;
        }
        line->points.emplace_back(static_cast<double>(r.bytes), r.time_us);
    }
    if (plot.series.size() == 1) {
        tools::plot_series predicted{"predicted (loom's model)", {}};
        for (const row& r : rows) {
            if (r.predicted_us >= 0) {
                predicted.points.emplace_back(static_cast<double>(r.bytes), r.predicted_us);
            }
        }
        plot.series.push_back(std::move(predicted));
    }
    std::string script = tools::gnuplot_script(plot, png);
    if (script.empty()) {
        *warning = "--plot: nothing to plot (no point with a positive time)";
        return "";
    }
    {
        std::ofstream out(gp);
        out << script;
        out.close();
        if (!out) {
            return io_error(gp);
        }
    }
    tools::gnuplot_outcome drawn = tools::run_gnuplot(gp, png);
    if (drawn.result == tools::gnuplot_outcome::kind::missing) {
        *warning = "--plot: " + drawn.message + "; wrote " + gp + " (run: gnuplot " + gp + ")";
    } else if (drawn.result == tools::gnuplot_outcome::kind::failed) {
        *warning = "--plot: " + drawn.message;
    }
    return "";
}

}  // namespace loom::bench
