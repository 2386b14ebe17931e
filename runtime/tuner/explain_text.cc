// SPDX-License-Identifier: Apache-2.0
// The explanation as people read it: one line per algorithm, fastest first, then those
// that cannot run the call and why.
#include <cmath>
#include <cstdio>
#include <string>

#include "tuner/tuner.hh"

namespace loom::tuner {
namespace {

std::string human_bytes(double b) {
    const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u              = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf,
                  b == static_cast<double>(static_cast<long long>(b)) ? "%.0f %s" : "%.1f %s", b,
                  unit[u]);
    return buf;
}

std::string human_time(double s) {
    char buf[32];
    if (s < 1e-3) {
        std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
    } else if (s < 1) {
        std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
    } else {
        std::snprintf(buf, sizeof buf, "%.3f s", s);
    }
    return buf;
}

}  // namespace

std::string explain_text(const algorithms::call& c, const ranking& r,
                         const algorithms::algorithm* chosen, std::string_view origin,
                         const machine_params& p, algorithms::port_model ports) {
    char line[512];
    std::string out;
    std::snprintf(line, sizeof line, "%s of %s on %d ranks (%s, %s ports)\n",
                  std::string(schedule::collective_name(c.coll)).c_str(),
                  human_bytes(r.bytes).c_str(), c.nranks, c.topo.to_string().c_str(),
                  std::string(algorithms::port_model_name(ports)).c_str());
    out += line;
    char reduce[48] = "not counted";
    if (p.reduce_bytes_per_s > 0) {
        std::snprintf(reduce, sizeof reduce, "%.3g GB/s", p.reduce_bytes_per_s / 1e9);
    }
    std::snprintf(line, sizeof line,
                  "  parameters (%s, %s): alpha %.3g us, BW %.3g GB/s, alpha_switch %.3g us, "
                  "reduce %s\n",
                  p.transport.c_str(), p.source.c_str(), p.alpha_s * 1e6, p.bw_bytes_per_s / 1e9,
                  p.switch_alpha() * 1e6, reduce);
    out += line;
    for (const candidate& k : r.candidates) {
        const char* mark = k.algo == chosen ? "->" : "  ";
        if (k.applicable) {
            std::snprintf(line, sizeof line, "  %s %-20s %12s   %s\n", mark,
                          std::string(k.algo->name).c_str(), human_time(k.time_s).c_str(),
                          k.reason.c_str());
        } else {
            std::snprintf(line, sizeof line, "  %s %-20s %12s   %s\n", mark,
                          std::string(k.algo->name).c_str(), "excluded", k.reason.c_str());
        }
        out += line;
    }
    std::string name = chosen ? std::string(chosen->name) : std::string("none");
    std::snprintf(line, sizeof line, "  choice: %s (%s)", name.c_str(),
                  std::string(origin).c_str());
    out += line;
    if (origin == "tuner" && r.best != chosen) {
        int b = size_bucket(r.bytes);
        out += "; cached for payloads of [" + human_bytes(std::ldexp(1.0, b - 1)) + ", " +
               human_bytes(std::ldexp(1.0, b)) + "), decided at " + human_bytes(bucket_middle(b));
    }
    out += "\n";
    return out;
}

}  // namespace loom::tuner
