// SPDX-License-Identifier: Apache-2.0
// The catalog of every component's parameters. It lives in comm, the one library that may
// depend on all the others, so any program that uses communicators (libloom, the tools)
// knows every LOOM_* name: `--config` lists them all, the README's table is printed from
// them, and a LOOM_* variable outside them is a misspelling worth a warning.
#pragma once

#include <span>

#include "base/params.hh"

namespace loom::comm {

/// Every component's declarations (each component also registers itself; naming them here
/// makes sure the linker keeps them all).
std::span<const loom::params::component* const> parameter_components();

/// Once per process: a warning for each LOOM_* variable of the environment that no
/// component declares, naming the closest declared one.
void warn_unknown_variables();

}  // namespace loom::comm
