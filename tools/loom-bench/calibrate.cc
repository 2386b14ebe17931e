// SPDX-License-Identifier: Apache-2.0
// `loom-bench calibrate`: measures the machine parameters the tuner predicts with
// (loom_comm_calibrate: α, BW, the reduction throughput) and shows them, so a user can see
// what the predictions in the pred column rest on, and refresh the calibration file.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench.hh"

namespace loom::bench {

int run_calibrate(const options& o) {
    loom_comm_t comm = nullptr;
    if (loom_status_t st = loom_comm_create(nullptr, &comm); st != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-bench: loom_comm_create: %s\n", loom_last_error_message());
        return st == LOOM_ERR_INVALID_ARGUMENT ? exit_bad_args : exit_failed;
    }
    int rank = loom_comm_rank(comm);
    loom_calibration_t cal{};
    cal.struct_size  = sizeof cal;
    loom_status_t st = loom_comm_calibrate(comm, o.thorough ? 1 : 0, &cal);
    if (st != LOOM_SUCCESS) {
        if (rank == 0) {
            std::fprintf(stderr, "loom-bench: calibrate: %s (%s)\n", loom_status_string(st),
                         loom_last_error_message());
        }
        loom_comm_destroy(comm);
        return exit_failed;
    }
    int code = exit_ok;
    if (rank == 0) {
        std::printf("# loom-bench calibrate (%s pass), N = %d ranks\n",
                    o.thorough ? "thorough" : "light", loom_comm_size(comm));
        std::printf("host          %s\n", cal.host);
        std::printf("transport     %s\n", cal.transport);
        std::printf("alpha         %.3f us\n", cal.alpha_s * 1e6);
        std::printf("BW            %.3f GB/s\n", cal.bw_bytes_per_s / 1e9);
        std::printf("reduce        %.3f GB/s\n", cal.reduce_bytes_per_s / 1e9);
        std::printf("alpha_switch  %.3f us\n", cal.alpha_switch_s * 1e6);
        std::printf("source        %s\n", cal.source);
        std::printf("file          %s\n", cal.file[0] != '\0' ? cal.file : "(none written)");
        if (!o.json_path.empty()) {
            nlohmann::ordered_json j = {{"host", cal.host},
                                        {"transport", cal.transport},
                                        {"alpha_us", cal.alpha_s * 1e6},
                                        {"bw_GBps", cal.bw_bytes_per_s / 1e9},
                                        {"reduce_GBps", cal.reduce_bytes_per_s / 1e9},
                                        {"alpha_switch_us", cal.alpha_switch_s * 1e6},
                                        {"source", cal.source},
                                        {"file", cal.file},
                                        {"thorough", o.thorough}};
            std::ofstream out(o.json_path);
            out << j.dump(2) << "\n";
            out.close();
            if (!out) {
                std::fprintf(stderr, "loom-bench: cannot write %s\n", o.json_path.c_str());
                code = exit_failed;
            } else {
                std::printf("# written to %s\n", o.json_path.c_str());
            }
        }
        std::fflush(stdout);
    }
    loom_comm_destroy(comm);
    return code;
}

}  // namespace loom::bench
