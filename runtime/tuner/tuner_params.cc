#include "tuner_params.hh"

namespace loom::tuner::params {

using loom::params::flag;

constinit const loom::params::choice_param port_model{
    "LOOM_PORT_MODEL", "per-edge", "per-edge|single-port",
    "cost-model port model: every rank pair has its own full-duplex link (per-edge, as the "
    "reference texts assume) or each rank has one full-duplex port into a switch"};
constinit const loom::params::string_param calibration_file{
    "LOOM_CALIBRATION_FILE", "",
    "the calibration file (one line per host and transport: alpha, BW, reduction throughput); "
    "unset: $XDG_CACHE_HOME/loom/calibration.txt, else ~/.cache/loom/calibration.txt"};
constinit const loom::params::choice_param calibrate{
    "LOOM_CALIBRATE", "auto", "auto|off",
    "auto: a communicator whose host and transport have no line in the calibration file measures "
    "alpha and BW (ranks 0 and 1, tens of ms) and rank 0 writes it; off: never measure, use the "
    "file's line or the built-in defaults"};
constinit const loom::params::string_param xdg_cache_home{
    "XDG_CACHE_HOME", "",
    "where the calibration file lives by default (loom/calibration.txt under it)", flag::foreign};
constinit const loom::params::string_param home{
    "HOME", "", "without XDG_CACHE_HOME, the calibration file is ~/.cache/loom/calibration.txt",
    flag::foreign};

const loom::params::component component{
    "tuner", {&port_model, &calibration_file, &calibrate, &xdg_cache_home, &home}};

}  // namespace loom::tuner::params
