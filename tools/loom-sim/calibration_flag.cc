// SPDX-License-Identifier: Apache-2.0
// --calibration FILE [--host H] [--transport T]: the machine parameters the runtime's tuner
// uses (runtime/tuner/calibration.hh), so loom-sim predicts, simulates and explains this
// machine with the same α and BW (loom-bench calibrate writes the file).
#include <cstdlib>

#include "base/check.hh"
#include "loom_sim.hh"
#include "tuner/calibration.hh"

namespace loom::sim_tool {

void add_calibration_options(CLI::App& cmd, calibration_flags& f) {
    cmd.add_option("--calibration", f.file,
                   "take α, BW (and α_switch) from this calibration file (loom-bench "
                   "calibrate); excludes --alpha and --bw")
        ->type_name("FILE");
    cmd.add_option("--host", f.host, "the calibration file's host (default: this host)")
        ->type_name("NAME");
    cmd.add_option("--transport", f.transport, "the calibration file's transport (default shm)")
        ->type_name("NAME");
}

result<std::optional<tuner::machine_params>> load_calibration(const calibration_flags& f,
                                                              bool alpha_or_bw_given,
                                                              const std::string& ranks_text) {
    if (f.file.empty()) {
        if (!f.host.empty() || !f.transport.empty()) {
            return invalid_argument("--host and --transport need --calibration FILE");
        }
        return std::optional<tuner::machine_params>{};
    }
    if (alpha_or_bw_given) {
        return invalid_argument("--calibration gives α and BW: drop --alpha and --bw");
    }
    std::string host      = f.host.empty() ? tuner::host_name() : f.host;
    std::string transport = f.transport.empty() ? "shm" : f.transport;
    int ranks             = std::atoi(ranks_text.c_str());  // 0 (any) when not given
    LOOM_ASSIGN(auto p, tuner::load(f.file, host, transport, ranks));
    if (!p) {
        return invalid_argument("--calibration " + f.file + ": no line for host '" + host +
                                "', transport '" + transport + "'" +
                                (ranks > 0 ? " and " + std::to_string(ranks) + " ranks" : "") +
                                " (loom-bench calibrate writes one)");
    }
    return p;
}

}  // namespace loom::sim_tool
