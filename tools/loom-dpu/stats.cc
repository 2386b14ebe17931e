// SPDX-License-Identifier: Apache-2.0
// loom-dpu's counters (stats.hh).
#include "stats.hh"

#include <cinttypes>

namespace loom::dpu {

const char* drop_name(int cause) {
    static const char* const names[drop_causes] = {
        "bad_type", "runt", "truncated", "too_long", "bad_header", "unknown_dst", "forged"};
    return cause >= 0 && cause < drop_causes ? names[cause] : "?";
}

void print_stats(std::FILE* out, int node, const std::vector<dpu_port>& ports,
                 const std::vector<port_stats>& stats) {
    for (size_t i = 0; i < ports.size(); ++i) {
        const dpu_port& p = ports[i];
        if (p.dev == nullptr) {
            continue;
        }
        const port_stats& s = stats[i];
        uint64_t dropped    = 0;
        for (uint64_t d : s.drops) {
            dropped += d;
        }
        std::fprintf(out,
                     "loom-dpu node %d port %zu (%s): in %" PRIu64 " frames %" PRIu64
                     " bytes; out vc0 %" PRIu64 " frames %" PRIu64 " bytes, vc1 %" PRIu64
                     " frames %" PRIu64 " bytes; queue high-water vc0 %" PRIu64 " vc1 %" PRIu64
                     "; input held %" PRIu64 "; dropped %" PRIu64 "\n",
                     node, i, p.label.c_str(), s.frames_in, s.bytes_in, s.frames_out[0],
                     s.bytes_out[0], s.frames_out[1], s.bytes_out[1], s.high_water[0],
                     s.high_water[1], s.held, dropped);
        // One line per port in key=value form: what tests and loomrun read.
        int to = p.host ? -1 : p.neighbour;
        std::fprintf(out,
                     "dpu-link node=%d port=%zu to_node=%d host_rank=%d frames_out=%" PRIu64
                     " bytes_out=%" PRIu64 " frames_in=%" PRIu64 " vc1_out=%" PRIu64 "\n",
                     node, i, to, p.rank, s.frames_out[0] + s.frames_out[1],
                     s.bytes_out[0] + s.bytes_out[1], s.frames_in, s.frames_out[1]);
        std::fprintf(out, "dpu-drops node=%d port=%zu", node, i);
        for (int c = 0; c < drop_causes; ++c) {
            std::fprintf(out, " %s=%" PRIu64, drop_name(c), s.drops[c]);
        }
        std::fprintf(out, "\n");
    }
    std::fflush(out);
}

}  // namespace loom::dpu
