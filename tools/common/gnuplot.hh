// SPDX-License-Identifier: Apache-2.0
// The one gnuplot writer of loom's tools (loom-bench --plot, loom-sim compare --plot): every
// plot has a title, axis labels with their units and a legend, drawn in one style (PNG,
// 960x640, log-log, lines with points, the legend outside on the right, a grid).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loom::tools {

/// One line of the plot: its legend entry and its (x, y) points.
struct plot_series {
    std::string title;
    std::vector<std::pair<double, double>> points;
};

struct plot_spec {
    std::string title;
    std::string xlabel;  // with its unit, e.g. "size (bytes)"
    std::string ylabel;  // with its unit, e.g. "time (us)"
    std::vector<plot_series> series;
};

/// The gnuplot script drawing `plot` into `png`, the data inline (one file to rerun); ""
/// when no series has a point to draw.
std::string gnuplot_script(const plot_spec& plot, const std::string& png);

/// What running gnuplot came to.
struct gnuplot_outcome {
    enum class kind { drawn, missing, failed } result = kind::drawn;
    std::string message;  // missing/failed: the reason, one line
};

/// Runs `gnuplot SCRIPT` (found on PATH), its messages kept aside and the last of them
/// quoted on failure; drawn only when `png` then exists and is not empty.
gnuplot_outcome run_gnuplot(const std::string& script_path, const std::string& png);

}  // namespace loom::tools
