// SPDX-License-Identifier: Apache-2.0
// The tuner's cost model and calibration file.
#pragma once

#include "base/params.hh"

namespace loom::tuner::params {

using loom::params::flag;

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"tuner"};

inline const loom::params::choice_param port_model{
    component, "LOOM_PORT_MODEL", "per-edge", "per-edge|single-port",
    "cost-model port model: every rank pair has its own full-duplex link (per-edge, as the "
    "reference texts assume) or each rank has one full-duplex port into a switch"};
inline const loom::params::string_param calibration_file{
    component, "LOOM_CALIBRATION_FILE", "",
    "the calibration file (one line per host and transport: alpha, BW, reduction throughput); "
    "unset: $XDG_CACHE_HOME/loom/calibration.txt, else ~/.cache/loom/calibration.txt"};
inline const loom::params::choice_param calibrate{
    component, "LOOM_CALIBRATE", "auto", "auto|off",
    "auto: a communicator whose host and transport have no line in the calibration file measures "
    "alpha and BW (ranks 0 and 1, tens of ms) and rank 0 writes it; off: never measure, use the "
    "file's line or the built-in defaults"};
inline const loom::params::string_param xdg_cache_home{
    component, "XDG_CACHE_HOME", "",
    "where the calibration file lives by default (loom/calibration.txt under it)", flag::foreign};
inline const loom::params::string_param home{
    component, "HOME", "",
    "without XDG_CACHE_HOME, the calibration file is ~/.cache/loom/calibration.txt", flag::foreign};

}  // namespace loom::tuner::params
