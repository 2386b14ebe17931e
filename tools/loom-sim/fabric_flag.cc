// SPDX-License-Identifier: Apache-2.0
// loom-sim: --topology FILE.json, a fabric file in place of a shape (run, predict, compare).
//
// A fabric file (fabric/topology/fabric.hh; topology::names_fabric_file: ends in .json or
// holds a '/') gives each link its own α and BW. The verbs route on the shape its ranks
// form (sim::shape_of: its "shape", else inferred from coordinates and links), simulate
// with the per-link costs (sim::on_fabric) and state closed forms at the slowest link's
// α and BW, which is why --alpha and --bw, which set every link of a shape, are refused.
#include "base/check.hh"
#include "loom_sim.hh"
#include "topology/fabric.hh"

namespace loom::sim_tool {

result<std::optional<fabric_file>> take_fabric_file(call_flags& flags, const sim::fabric& base,
                                                    bool alpha_or_bw_given) {
    if (flags.topology.empty() || !topology::names_fabric_file(flags.topology)) {
        return std::optional<fabric_file>();
    }
    fabric_file out;
    out.path = flags.topology;
    if (alpha_or_bw_given) {
        return invalid_argument("--alpha and --bw set every link of a shape; the fabric file '" +
                                out.path + "' gives each link its own α and BW");
    }
    LOOM_ASSIGN(auto loaded, topology::load_fabric_file(out.path));
    LOOM_ASSIGN(out.fabric, sim::on_fabric(loaded, base, out.path));
    flags.topology = out.fabric.topo.to_string();
    if (flags.ranks.empty()) {
        flags.ranks = std::to_string(out.fabric.topo.size());
    }
    return std::optional<fabric_file>(std::move(out));
}

std::string fabric_file_note(const fabric_file& f) {
    return "fabric file " + f.path + ": " + f.fabric.topo.to_string() +
           ", per-link α and BW; the slowest link: α = " + format_us(f.fabric.alpha_s) +
           " µs, BW = " + format_number(f.fabric.bw_bytes_per_s / 1e9) +
           " GB/s (the closed forms use these)";
}

}  // namespace loom::sim_tool
