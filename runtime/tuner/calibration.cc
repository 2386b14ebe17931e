// SPDX-License-Identifier: Apache-2.0
#include "tuner/calibration.hh"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/check.hh"
#include "base/text_file.hh"

namespace loom::tuner {
namespace {

// Creates every directory of `path`'s parent (mkdir -p), ignoring those that exist.
void make_parents(const std::string& path) {
    for (size_t i = 1; i < path.size(); ++i) {
        if (path[i] == '/') {
            ::mkdir(path.substr(0, i).c_str(), 0755);
        }
    }
}

// A finite decimal number ("inf", "nan" and out-of-range values are refused: every
// figure of a calibration line multiplies into a predicted time).
bool parse_double(std::string_view text, double* out) {
    std::string s(text);
    char* end = nullptr;
    errno     = 0;
    double v  = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v)) {
        return false;
    }
    *out = v;
    return true;
}

// The lines of a calibration file's text, numbered from 1, comments and blanks skipped.
template <class Fn>
status for_each_line(std::string_view text, Fn&& fn) {
    int number = 0;
    while (!text.empty()) {
        size_t end            = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == text.npos ? text.size() : end + 1);
        ++number;
        if (line.empty() || line[0] == '#') {
            continue;
        }
        LOOM_CHECK(fn(line, number));
    }
    return status::ok();
}

// The file's text; an empty text when it does not exist (no calibration yet).
result<std::string> read_calibration(const std::string& path) {
    int open_errno = 0;
    auto text = read_text_file(path, "calibration file", max_calibration_file_bytes, &open_errno);
    if (!text && (open_errno == ENOENT || open_errno == ENOTDIR)) {
        return std::string();
    }
    return text;
}

std::string today() {
    time_t t = ::time(nullptr);
    tm parts{};
    gmtime_r(&t, &parts);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return buf;
}

}  // namespace

machine_params defaults_for(std::string_view cost_class) {
    machine_params p;
    p.transport = cost_class;
    if (p.transport == "tcp") {
        p.alpha_s        = 15e-6;
        p.bw_bytes_per_s = 2e9;
    } else if (p.transport == "self") {
        p.alpha_s        = 0.2e-6;
        p.bw_bytes_per_s = 10e9;
    } else {  // shm and anything new: the shared-memory figures
        p.alpha_s        = 2e-6;
        p.bw_bytes_per_s = 4e9;
    }
    p.reduce_bytes_per_s = 8e9;
    p.host               = host_name();
    return p;
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
        return "localhost";
    }
    return buf;
}

std::string calibration_path(std::string_view configured, std::string_view xdg_cache_home,
                             std::string_view home) {
    if (!configured.empty()) {
        return std::string(configured);
    }
    if (!xdg_cache_home.empty()) {
        return std::string(xdg_cache_home) + "/loom/calibration.txt";
    }
    return std::string(home.empty() ? "/tmp" : home) + "/.cache/loom/calibration.txt";
}

std::string to_line(const machine_params& p) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "host=%s transport=%s%s alpha_us=%.4g bw_GBps=%.4g reduce_GBps=%.4g "
                  "alpha_switch_us=%.4g source=%s date=%s",
                  p.host.c_str(), p.transport.c_str(),
                  p.ranks > 0 ? (" ranks=" + std::to_string(p.ranks)).c_str() : "", p.alpha_s * 1e6,
                  p.bw_bytes_per_s / 1e9, p.reduce_bytes_per_s / 1e9, p.switch_alpha() * 1e6,
                  p.source.c_str(), p.date.empty() ? today().c_str() : p.date.c_str());
    std::string line = buf;
    if (p.alpha_flat_s >= 0) {  // only where measured or written by hand (flat_alpha())
        std::snprintf(buf, sizeof buf, " alpha_flat_us=%.4g", p.alpha_flat_s * 1e6);
        line += buf;
    }
    // How it was measured, when known (older lines and hand-written ones lack it).
    if (p.load1 >= 0) {
        std::snprintf(buf, sizeof buf, " load1=%.2f cpus=%d", p.load1, p.cpus);
        line += buf;
    }
    if (p.repeats > 0) {
        std::snprintf(buf, sizeof buf, " repeats=%d spread=%.3g", p.repeats, p.spread);
        line += buf;
    }
    if (!p.version.empty()) {
        line += " version=" + p.version;
    }
    if (!p.method.empty()) {
        line += " method=" + p.method;
    }
    return line;
}

result<machine_params> from_line(std::string_view line) {
    machine_params p;
    bool have_alpha = false, have_bw = false;
    std::istringstream in{std::string(line)};
    std::string field;
    while (in >> field) {
        size_t eq = field.find('=');
        if (eq == std::string::npos) {
            return parse_error("'" + field + "' is not key=value");
        }
        std::string key = field.substr(0, eq), value = field.substr(eq + 1);
        double v = 0;
        // reduce_GBps may be 0: "do not count reductions".
        auto number = [&](double scale, double* out) -> status {
            bool zero_ok = key == "reduce_GBps";
            if (!parse_double(value, &v) || !(v > 0 || (zero_ok && v == 0)) ||
                !std::isfinite(v * scale) || (v > 0 && !(v * scale > 0))) {
                return parse_error(key + "='" + value + "' is not a positive number");
            }
            *out = v * scale;
            return status::ok();
        };
        if (key == "host") {
            p.host = value;
        } else if (key == "transport") {
            p.transport = value;
        } else if (key == "alpha_us") {
            LOOM_CHECK(number(1e-6, &p.alpha_s));
            have_alpha = true;
        } else if (key == "bw_GBps") {
            LOOM_CHECK(number(1e9, &p.bw_bytes_per_s));
            have_bw = true;
        } else if (key == "reduce_GBps") {
            LOOM_CHECK(number(1e9, &p.reduce_bytes_per_s));
        } else if (key == "alpha_switch_us") {
            LOOM_CHECK(number(1e-6, &p.alpha_switch_s));
        } else if (key == "alpha_flat_us") {
            LOOM_CHECK(number(1e-6, &p.alpha_flat_s));
        } else if (key == "ranks") {
            // Range first: converting a double beyond int's range to int is undefined.
            double r = 0;
            if (!parse_double(value, &r) || !(r >= 1 && r <= max_calibration_ranks) ||
                r != std::floor(r)) {
                return parse_error("ranks='" + value + "' is not a whole number from 1 to " +
                                   std::to_string(max_calibration_ranks));
            }
            p.ranks = static_cast<int>(r);
        } else if (key == "source") {
            p.source   = value;
            p.measured = value == "measured";
        } else if (key == "date") {
            p.date = value;
        } else if (key == "version") {
            p.version = value;
        } else if (key == "method") {
            p.method = value;
        } else if (key == "load1" || key == "spread") {
            // The record of a measurement: kept when readable, never a reason to refuse.
            if (parse_double(value, &v) && v >= 0) {
                (key == "load1" ? p.load1 : p.spread) = v;
            }
        } else if (key == "cpus" || key == "repeats") {
            if (parse_double(value, &v) && v >= 0 && v <= 1e6 && v == std::floor(v)) {
                (key == "cpus" ? p.cpus : p.repeats) = static_cast<int>(v);
            }
        }  // keys of later versions: ignored
    }
    if (p.host.empty() || p.transport.empty() || !have_alpha || !have_bw) {
        return parse_error("a line needs host=, transport=, alpha_us= and bw_GBps=");
    }
    return p;
}

result<std::optional<machine_params>> load(const std::string& path, std::string_view host,
                                           std::string_view cost_class, int ranks) {
    LOOM_ASSIGN(std::string text, read_calibration(path));
    std::optional<machine_params> exact, any_ranks;  // any_ranks: a line without ranks=
    status st = for_each_line(text, [&](std::string_view line, int number) -> status {
        if (exact) {  // found: the lines after it are not read, as before
            return status::ok();
        }
        auto p = from_line(line);
        if (!p) {
            return status(p.error()).prefix("calibration file " + path + " line " +
                                            std::to_string(number) + ": ");
        }
        if (p->host != host || p->transport != cost_class) {
            return status::ok();
        }
        p->file   = path;
        p->source = "file";
        if (p->ranks == ranks) {
            exact = std::move(p).value();
        } else if (p->ranks == 0 && !any_ranks) {
            any_ranks = std::move(p).value();
        }
        return status::ok();
    });
    if (!st) {
        return st;
    }
    return exact ? exact : any_ranks;
}

status save(const std::string& path, const machine_params& p) {
    std::vector<std::string> keep;
    // Not a regular file, unreadable: left alone rather than replaced.
    LOOM_ASSIGN(std::string text, read_calibration(path));
    (void)for_each_line(text, [&](std::string_view line, int) {
        auto other = from_line(line);
        if (other &&
            (other->host != p.host || other->transport != p.transport || other->ranks != p.ranks)) {
            keep.emplace_back(line);
        }
        return status::ok();
    });
    make_parents(path);
    // Unique per process: ranks of several jobs may save at once; the last rename wins.
    std::string aside = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(aside, std::ios::trunc);
        if (!out) {
            return status(LOOM_ERR_SYSTEM, "cannot write the calibration file " + path + ": " +
                                               std::strerror(errno) + " (writing " + aside + ")");
        }
        out << "# loom calibration: one line per host, transport and rank count (loom-bench "
               "calibrate).\n"
               "# Delete it to measure again. A line written by hand (no source= field) is never "
               "measured again.\n";
        for (const std::string& line : keep) {
            out << line << '\n';
        }
        out << to_line(p) << '\n';
        if (!out.flush()) {
            int e = errno;
            out.close();
            ::unlink(aside.c_str());
            return status(LOOM_ERR_SYSTEM, "cannot write the calibration file " + path + ": " +
                                               std::strerror(e) + " (writing " + aside + ")");
        }
    }
    if (::rename(aside.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(aside.c_str());
        return status(LOOM_ERR_SYSTEM,
                      "cannot replace the calibration file " + path + ": " + std::strerror(e));
    }
    return status::ok();
}

}  // namespace loom::tuner
