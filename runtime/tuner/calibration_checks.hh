// SPDX-License-Identifier: Apache-2.0
// Whether calibration figures can steer the tuner. A measurement taken while the machine was
// busy or noisy can be several times off (shared memory slower than TCP), and a figure in the
// calibration file is used by every later communicator, so each is judged twice: when it is
// measured (an implausible one is measured again, then not stored) and when it is read (an
// implausible, stale or busy one is measured again, or the defaults used, and the log says
// which). Lines written by hand (without source=measured) are the user's word: a
// communicator never judges them.
#pragma once

#include <ctime>
#include <string>

#include "tuner/calibration.hh"

namespace loom::tuner {

/// The bounds no machine loom runs on leaves: α of 5 ns to 50 ms, a bandwidth or reduction
/// throughput of 1 MB/s to 10 TB/s.
constexpr double min_alpha_s = 5e-9, max_alpha_s = 50e-3;
constexpr double min_bytes_per_s = 1e6, max_bytes_per_s = 1e13;

/// What judges a measurement.
struct plausibility_limits {
    // Repeats of α may differ by this fraction of their median: loaded shared machines give
    // about 0.7, a measurement thrown off by a burst of other work several times that.
    double max_spread   = 2.0;
    double max_age_days = 30;  // a measured line older than this is measured again
};

/// Why figures cannot be true of this machine, "" when they can: α, BW or the reduction
/// throughput outside the bounds above; repeats that disagree by more than
/// limits.max_spread; a shared-memory α above the same host's network α (`tcp_alpha_s`, < 0
/// when there is no network line to compare with).
std::string implausible(const machine_params& p, double tcp_alpha_s,
                        const plausibility_limits& limits);

/// Why a measured line is too old to trust, "" when it is not: its date is more than
/// limits.max_age_days before `now`, or after it (a clock that jumped), or unreadable.
std::string stale(const machine_params& p, std::time_t now, const plausibility_limits& limits);

/// Why a measurement was taken on a busy machine, "" when it was not: the load average
/// before it exceeded the CPUs online. Such figures are used, and measured again once the
/// host is quieter.
std::string busy(const machine_params& p);

}  // namespace loom::tuner
