// SPDX-License-Identifier: Apache-2.0
// loomrun --link-stats: the directory the ranks' communicators write their link counters to
// (LOOM_LINK_STATS_DIR, runtime/comm/comm.cc) and the table loomrun prints after the job.
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "loomrun.hh"

namespace loom::loomrun {

result<std::unique_ptr<link_stats_dir>> link_stats_dir::create() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) {
        base = "/tmp";
    }
    std::string templ = (base / "loomrun-links-XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) {
        return system_error("--link-stats: cannot create a directory " + templ + ": " +
                            std::strerror(errno));
    }
    return std::unique_ptr<link_stats_dir>(new link_stats_dir(templ));
}

link_stats_dir::~link_stats_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

void link_stats_dir::print(int ranks, std::FILE* out) const {
    std::fprintf(out, "link stats (bytes and chunks per link, both directions as seen by rank):\n");
    std::fprintf(out, "%6s %6s %14s %14s %10s %10s %10s\n", "rank", "peer", "sent_bytes",
                 "recv_bytes", "sent_msgs", "recv_msgs", "forwarded");
    for (int r = 0; r < ranks; ++r) {
        std::ifstream in(path_ + "/rank-" + std::to_string(r) + ".txt");
        if (!in) {
            std::fprintf(out, "%6d (no link counters: the rank wrote none)\n", r);
            continue;
        }
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            int peer              = -1;
            unsigned long long sb = 0, rb = 0, sm = 0, rm = 0, fw = 0;
            if (fields >> peer >> sb >> rb >> sm >> rm >> fw) {
                std::fprintf(out, "%6d %6d %14llu %14llu %10llu %10llu %10llu\n", r, peer, sb, rb,
                             sm, rm, fw);
            }
        }
    }
}

}  // namespace loom::loomrun
