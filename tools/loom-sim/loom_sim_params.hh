// SPDX-License-Identifier: Apache-2.0
// loom-sim's own variable: the system's PATH, where compare --plot looks for gnuplot.
#pragma once

#include "base/params.hh"

namespace loom::sim_tool::params {

using loom::params::flag;

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"loom-sim"};

inline const loom::params::string_param path{
    component, "PATH", "", "where loom-sim compare --plot looks for gnuplot", flag::foreign};

}  // namespace loom::sim_tool::params
