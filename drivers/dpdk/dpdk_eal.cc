// SPDX-License-Identifier: Apache-2.0
// The EAL, started once per process (dpdk_eal.hh). The default arguments, each for a reason:
//   --no-huge -m 256   memory from ordinary pages (no hugepages need be reserved); 256 MB of
//                      address space, touched only as pools fill (a port's pool is some 6 MB)
//   --no-pci           no PCI scan: ports are virtual devices probed at run time (memif,
//                      af_packet), and a scan would claim NICs the machine uses
//   --no-shconf        no shared config files: no DPDK multi-process, so any number of loom
//                      processes start side by side without a --file-prefix each, and nothing
//                      is left in DPDK's run directory (its empty folder is removed here)
//   --no-telemetry     no telemetry socket per process
//   --log-level        DPDK's errors only: loom logs what it opened (dpdk_port.cc)
//   -l CPU             one lcore, the CPU the caller runs on: loom polls from the caller's
//                      thread, never from DPDK's lcore threads
// (--in-memory would do --no-shconf's job but DPDK 22.11 refuses it with --no-huge.) The
// EAL pins the calling thread to its lcore; the thread's affinity is given back after, as
// loom polls from the application's thread and does not choose its CPU.
#include "drivers/dpdk/dpdk_eal.hh"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_version.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <sstream>

#include "base/log.hh"
#include "drivers/dpdk/dpdk_params.hh"

namespace loom::drivers::dpdk {
namespace {

std::vector<std::string> default_arguments() {
    int cpu = ::sched_getcpu();
    return {"--no-huge",
            "-m",
            "256",
            "--no-pci",
            "--no-shconf",
            "--no-telemetry",
            "--log-level=*:error",
            "-l",
            std::to_string(cpu < 0 ? 0 : cpu)};
}

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) {
        s += (s.empty() ? "" : " ") + a;
    }
    return s;
}

struct eal_state {
    std::mutex mutex;
    bool tried = false;
    status outcome;
    std::vector<std::string> args;
    // rte_eal_init keeps pointers into argv (and permutes it): both live as long as the process.
    std::vector<std::string> storage;
    std::vector<char*> argv;
};

eal_state& state() {
    static eal_state* s = new eal_state;  // never destroyed: the EAL outlives static teardown
    return *s;
}

std::vector<std::string> arguments_from_params() {
    std::string text = params::eal_args.get();
    if (text.empty()) {
        return default_arguments();
    }
    std::vector<std::string> args;
    std::istringstream in(text);
    for (std::string a; in >> a;) {
        args.push_back(a);
    }
    return args;
}

}  // namespace

std::vector<std::string> eal_arguments() {
    auto& s = state();
    std::lock_guard<std::mutex> hold(s.mutex);
    return s.tried ? s.args : arguments_from_params();
}

status ensure_eal() {
    auto& s = state();
    std::lock_guard<std::mutex> hold(s.mutex);
    if (s.tried) {
        return s.outcome;
    }
    s.tried = true;
    s.args  = arguments_from_params();
    s.storage.push_back("loom");
    s.storage.insert(s.storage.end(), s.args.begin(), s.args.end());
    for (auto& a : s.storage) {
        s.argv.push_back(a.data());
    }
    s.argv.push_back(nullptr);

    cpu_set_t affinity;
    bool have_affinity = ::sched_getaffinity(0, sizeof affinity, &affinity) == 0;
    int rc             = rte_eal_init(int(s.storage.size()), s.argv.data());
    if (rc < 0 && rte_errno == EALREADY) {
        // The application started the EAL itself: loom's ports live in it as they are.
        LOOM_LOG_INFO(log::subsystem::net, "dpdk: the EAL was started by the application");
        return s.outcome;
    }
    if (rc < 0) {
        s.outcome = system_error("dpdk: rte_eal_init(" + joined(s.args) +
                                 ") failed: " + rte_strerror(rte_errno) +
                                 " (DPDK's log above says more; LOOM_DPDK_EAL_ARGS sets them)");
        return s.outcome;
    }
    if (have_affinity) {
        (void)::sched_setaffinity(0, sizeof affinity, &affinity);
    }
    if (!params::eal_args.is_set()) {
        // With --no-shconf the run directory stays empty: remove it (rmdir fails harmlessly
        // when another process's EAL put files there).
        (void)::rmdir(rte_eal_get_runtime_dir());
    }
    LOOM_LOG_INFO(log::subsystem::net, "dpdk: EAL started (%s): %s", rte_version(),
                  joined(s.args).c_str());
    return s.outcome;
}

std::string unique_name(const char* what) {
    static std::atomic<unsigned> next{0};
    return std::string(what) + std::to_string(next.fetch_add(1));
}

}  // namespace loom::drivers::dpdk
