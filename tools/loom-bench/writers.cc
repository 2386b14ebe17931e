// The machine-readable outputs: --csv (one row per measured point), --json (the run and its
// rows; also what --baseline reads) and --plot (a gnuplot script and its data next to the
// PNG, then gnuplot). Rank 0 writes them after the sweep, so nothing here runs while timing.
#include <spawn.h>
#include <sys/wait.h>
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

extern char** environ;

namespace loom::bench {
namespace {

constexpr const char* csv_header =
    "collective,nranks,algo,tuner_choice,bytes,count,dtype,op,root,inplace,mean_us,p50_us,"
    "p99_us,algbw_GBps,busbw_GBps,wrong,predicted_us,sent_bytes_per_rank";

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
    j["mean_us"]    = r.mean_us;
    j["p50_us"]     = r.p50_us;
    j["p99_us"]     = r.p99_us;
    j["algbw_GBps"] = r.algbw;
    j["busbw_GBps"] = r.busbw;
    j["wrong"]      = r.wrong < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.wrong);
    j["predicted_us"] =
        r.predicted_us < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.predicted_us);
    j["sent_bytes_per_rank"] =
        r.sent_bytes < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.sent_bytes);
    return j;
}

// gnuplot's single-quoted strings escape a quote by doubling it.
std::string gnuplot_quoted(const std::string& s) {
    std::string out = "'";
    for (char ch : s) {
        out += ch == '\'' ? std::string("''") : std::string(1, ch);
    }
    return out + "'";
}

}  // namespace

run_info describe_run(const options& o, int n) {
    run_info info;
    info.collective = collective_name(o.coll);
    info.nranks     = n;
    info.transport  = comm::params::transport.get();
    char host[256]  = {};
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

std::string write_csv(const std::string& path, const std::vector<row>& rows) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
        return io_error(path);
    }
    std::fprintf(f, "%s\n", csv_header);
    for (const row& r : rows) {
        // No field can hold a comma or a quote (names are loom's identifiers), so no quoting.
        std::fprintf(f, "%s,%d,%s,%s,%llu,%llu,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s\n",
                     r.collective.c_str(), r.nranks, r.algo.c_str(),
                     r.tuner_choice < 0    ? ""
                     : r.tuner_choice == 1 ? "1"
                                           : "0",
                     static_cast<unsigned long long>(r.bytes),
                     static_cast<unsigned long long>(r.count), r.dtype.c_str(), r.op.c_str(),
                     r.root, r.inplace ? 1 : 0, number(r.mean_us).c_str(), number(r.p50_us).c_str(),
                     number(r.p99_us).c_str(), number(r.algbw).c_str(), number(r.busbw).c_str(),
                     r.wrong < 0 ? "" : std::to_string(static_cast<long long>(r.wrong)).c_str(),
                     r.predicted_us < 0 ? "" : number(r.predicted_us).c_str(),
                     r.sent_bytes < 0 ? "" : number(r.sent_bytes).c_str());
    }
    bool ok = std::fflush(f) == 0 && !std::ferror(f);
    ok      = std::fclose(f) == 0 && ok;
    return ok ? "" : io_error(path);
}

std::string write_json(const std::string& path, const run_info& info,
                       const std::vector<row>& rows) {
    nlohmann::ordered_json doc;
    doc["collective"] = info.collective;
    doc["nranks"]     = info.nranks;
    doc["transport"]  = info.transport;
    doc["host"]       = info.host;
    doc["date"]       = info.date;
    doc["rows"]       = nlohmann::ordered_json::array();
    for (const row& r : rows) {
        doc["rows"].push_back(row_json(r));
    }
    std::ofstream out(path);
    out << doc.dump(2) << "\n";
    out.close();
    return out ? "" : io_error(path);
}

std::string write_plot(const std::string& png, const std::vector<row>& rows, std::string* warning) {
    std::string base = png.substr(0, png.size() - 4);  // options.cc insists on ".png"
    std::string gp = base + ".gp", dat = base + ".dat";
    std::vector<std::string> algos;
    std::vector<uint64_t> sizes;
    bool predicted = false;
    for (const row& r : rows) {
        if (std::find(algos.begin(), algos.end(), r.algo) == algos.end()) {
            algos.push_back(r.algo);
        }
        if (std::find(sizes.begin(), sizes.end(), r.bytes) == sizes.end()) {
            sizes.push_back(r.bytes);
        }
        predicted = predicted || r.predicted_us >= 0;
    }
    // One algorithm: measured against predicted (when loom predicts); several: one line each.
    bool vs_predicted = algos.size() == 1 && predicted;

    std::FILE* f = std::fopen(dat.c_str(), "w");
    if (f == nullptr) {
        return io_error(dat);
    }
    std::fprintf(f, "# size(B)");
    for (const std::string& a : algos) {
        std::fprintf(f, " %s", a.empty() ? "measured" : a.c_str());
    }
    std::fprintf(f, "%s\n", vs_predicted ? " predicted" : "");
    for (uint64_t bytes : sizes) {
        std::fprintf(f, "%llu", static_cast<unsigned long long>(bytes));
        const row* any = nullptr;
        for (const std::string& a : algos) {
            const row* cell = nullptr;
            for (const row& r : rows) {
                if (r.bytes == bytes && r.algo == a) {
                    cell = &r;
                }
            }
            any = cell != nullptr ? cell : any;
            std::fprintf(f, " %s", cell != nullptr ? number(cell->p50_us).c_str() : "?");
        }
        if (vs_predicted) {
            std::fprintf(
                f, " %s",
                any != nullptr && any->predicted_us >= 0 ? number(any->predicted_us).c_str() : "?");
        }
        std::fprintf(f, "\n");
    }
    if (std::fclose(f) != 0) {
        return io_error(dat);
    }

    f = std::fopen(gp.c_str(), "w");
    if (f == nullptr) {
        return io_error(gp);
    }
    std::fprintf(f,
                 "set terminal png size 900,600\n"
                 "set output %s\n"
                 "set logscale xy\n"
                 "set xlabel 'size (B)'\n"
                 "set ylabel 'p50 time (us)'\n"
                 "set key left top\n"
                 "set grid\n"
                 "set datafile missing '?'\n"
                 "plot ",
                 gnuplot_quoted(png).c_str());
    size_t columns = algos.size() + (vs_predicted ? 1 : 0);
    for (size_t c = 0; c < columns; ++c) {
        std::string title =
            c < algos.size() ? (algos[c].empty() ? "measured" : algos[c]) : "predicted";
        std::fprintf(f, "%s%s using 1:%zu with linespoints title %s", c ? ", \\\n     " : "",
                     gnuplot_quoted(dat).c_str(), c + 2, gnuplot_quoted(title).c_str());
    }
    std::fprintf(f, "\n");
    if (std::fclose(f) != 0) {
        return io_error(gp);
    }

    pid_t pid       = 0;
    char prog[]     = "gnuplot";
    std::string arg = gp;
    char* argv[]    = {prog, arg.data(), nullptr};
    int err         = posix_spawnp(&pid, prog, nullptr, nullptr, argv, environ);
    if (err != 0) {
        *warning = "--plot: cannot run gnuplot (" + std::string(std::strerror(err)) + "); wrote " +
                   gp + " and " + dat + " (run: gnuplot " + gp + ")";
        return "";
    }
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        *warning = "--plot: gnuplot " + gp + " failed; " + png + " may be missing";
    }
    return "";
}

}  // namespace loom::bench
