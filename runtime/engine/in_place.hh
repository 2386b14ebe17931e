// SPDX-License-Identifier: Apache-2.0
// Which input bytes an in-place call must set aside before it starts.
//
// In place, the output overwrites the input. A schedule is safe on such a buffer wherever
// each input byte is read before (in its dependency order) the output byte on top of it is
// written: the reading step is an ancestor of the writing step, or is the writing step itself
// reading and writing the same elements (a reduction or copy in place). Only the inputs read
// by a step that is not ordered so are copied aside, and only those steps read the copy.
// Ring all-reduce, for example, sets aside nothing; an in-place broadcast's root copies
// nothing (its copy of the input onto itself is skipped).
//
// The analysis runs once per plan, for the overlap loom.h defines as in place (output ==
// input, or all-gather's input = this rank's block of the output). Another overlap, or a plan
// too large to analyse within in_place_budget_bits, copies the whole input as before.
#pragma once

#include "engine/plan.hh"
#include "schedule/schedule.hh"

namespace loom::engine {

/// Ancestor bits (steps × reading steps) the analysis may use; above it, the plan copies the
/// whole input aside when it runs in place.
constexpr int64_t in_place_budget_bits = int64_t{1} << 26;

/// Fills p.in_place_* and points the steps that read an at-risk input at
/// buffer::input_aside. `p.steps` must already be compiled from `rs`.
void analyse_in_place(const schedule::rank_schedule& rs, plan& p);

}  // namespace loom::engine
