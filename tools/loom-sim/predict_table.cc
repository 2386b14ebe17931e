// SPDX-License-Identifier: Apache-2.0
// loom-sim predictions: every algorithm × every size through algorithms::predict() (the
// closed forms, routed over the physical links for oblivious algorithms on a lattice)
// (t = n_alpha·α + n_beta·M/BW, algorithm.hh), as a table or as JSON objects. Shared by
// `predict` and `overview`.
//
// A size becomes a call with one-byte elements, so that the call's payload_bytes is exactly
// the size asked for (collective.hh conventions: for all-to-all M is the whole send buffer,
// so count = M / N). Applicability is asked of algorithms::check_call for that call, so an
// algorithm whose constraints depend on the count is judged per size.
#include <algorithm>
#include <iomanip>
#include <ostream>

#include "loom_sim.hh"

namespace loom::sim_tool {
namespace {

std::string format_rate(double bw) {
    if (bw >= 1e9) {
        return format_number(bw / 1e9) + " GB/s";
    }
    if (bw >= 1e6) {
        return format_number(bw / 1e6) + " MB/s";
    }
    return format_number(bw) + " B/s";
}

// A table cell: "~" for an asymptotic form, "*" on the fastest.
std::string cell(const prediction& p) {
    if (!p.applicable) {
        return "n/a ";
    }
    return (p.cost.exact ? "" : "~") + format_us(p.time_s) + (p.fastest ? "*" : " ");
}

// One table line, right-aligned cells, without the trailing blanks of the marker column.
void print_row(std::ostream& out, std::string_view name, size_t name_width,
               const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
    std::string line = "  " + std::string(name);
    line.resize(2 + name_width, ' ');
    for (size_t s = 0; s < cells.size(); ++s) {
        line += std::string(2 + widths[s] - std::min(widths[s], cells[s].size()), ' ') + cells[s];
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
}

}  // namespace

int64_t payload_per_element(const algorithms::call& c) {
    schedule::schedule_info unit;
    unit.coll        = c.coll;
    unit.nranks      = c.nranks;
    unit.count       = 1;
    unit.dtype_size  = c.dtype_size;
    auto per_element = static_cast<int64_t>(schedule::payload_bytes(unit));
    return per_element > 0 ? per_element : 1;
}

result<int64_t> count_for_bytes(const algorithms::call& c, int64_t bytes) {
    int64_t per_element = payload_per_element(c);
    if (bytes % per_element != 0) {
        return invalid_argument("--bytes " + std::to_string(bytes) + " is not a whole number of " +
                                std::to_string(per_element) + "-byte elements for " +
                                std::string(schedule::collective_name(c.coll)) + " on " +
                                std::to_string(c.nranks) + " ranks");
    }
    return bytes / per_element;
}

std::vector<prediction> predict_grid(const algorithms::call& base,
                                     std::span<const algorithms::algorithm* const> algos,
                                     std::span<const int64_t> sizes, const cost_model& model,
                                     bool auto_segments) {
    std::vector<prediction> grid;
    for (const algorithms::algorithm* a : algos) {
        for (int64_t bytes : sizes) {
            prediction p;
            p.algo             = a;
            p.bytes            = bytes;
            algorithms::call c = base;
            c.dtype_size       = 1;
            c.channels         = 1;
            c.count            = bytes / payload_per_element(c);
            auto m             = static_cast<double>(bytes);
            auto time_at       = [&](int segments) -> std::optional<double> {
                algorithms::call at = c;
                at.segments         = segments;
                if (!algorithms::check_call(*a, at)) {
                    return std::nullopt;
                }
                return algorithms::predict(*a, at, m, model.ports)
                    .time_s(model.alpha_s, model.bw_bytes_per_s, m, model.alpha_switch_s);
            };
            if (auto_segments) {
                c.segments = std::max(1, best_segments(auto_segments_cap(c), time_at).segments);
            }
            p.segments = c.segments;
            // A node-local algorithm (flat) runs on one host's shared segment, which the
            // simulator's fabrics do not model (it would time its steps as an aggregation
            // node's): not a candidate here.
            p.applicable = a->node_local ? status(LOOM_ERR_NOT_APPLICABLE,
                                                  std::string(a->name) +
                                                      ": runs on a node's shared segment, which "
                                                      "the simulator does not model")
                                         : algorithms::check_call(*a, c);
            if (p.applicable) {
                p.cost = algorithms::predict(*a, c, m, model.ports);
                p.time_s =
                    p.cost.time_s(model.alpha_s, model.bw_bytes_per_s, m, model.alpha_switch_s);
            }
            grid.push_back(std::move(p));
        }
    }
    mark_least_time(
        grid, sizes.size(), [](const prediction& p) { return p.applicable.is_ok(); },
        [](const prediction& p) { return p.time_s; },
        [](prediction& p, bool least) { p.fastest = least; });
    return grid;
}

std::string grid_title(const algorithms::call& base, const cost_model& model, bool auto_segments) {
    return std::string(schedule::collective_name(base.coll)) + " on " + base.topo.to_string() +
           " (" + std::to_string(base.nranks) + " ranks), " +
           std::string(algorithms::port_model_name(model.ports)) +
           ", α = " + format_number(model.alpha_s * 1e6) + " µs" +
           alpha_switch_text(model.alpha_switch_s) + ", BW = " + format_rate(model.bw_bytes_per_s) +
           ", P = " + (auto_segments ? std::string("auto") : std::to_string(base.segments));
}

void print_grid(std::ostream& out, std::span<const int64_t> sizes,
                const std::vector<prediction>& grid) {
    const size_t nsizes = sizes.size();
    size_t name_width   = 9;  // "algorithm"
    std::vector<size_t> widths(nsizes);
    for (size_t s = 0; s < nsizes; ++s) {
        widths[s] = format_size(sizes[s]).size() + 1;  // the header keeps the marker column
    }
    std::vector<const prediction*> never;  // rows that apply at no size
    for (size_t row = 0; row * nsizes < grid.size(); ++row) {
        bool any = false;
        for (size_t s = 0; s < nsizes; ++s) {
            const prediction& p = grid[row * nsizes + s];
            widths[s]           = std::max(widths[s], cell(p).size());
            any                 = any || p.applicable.is_ok();
        }
        if (!any) {
            never.push_back(&grid[row * nsizes]);
        } else {
            name_width = std::max(name_width, grid[row * nsizes].algo->name.size());
        }
    }
    std::vector<std::string> header(nsizes);
    for (size_t s = 0; s < nsizes; ++s) {
        header[s] = format_size(sizes[s]) + " ";
    }
    print_row(out, "algorithm", name_width, header, widths);
    for (size_t row = 0; row * nsizes < grid.size(); ++row) {
        const prediction& first = grid[row * nsizes];
        if (std::find(never.begin(), never.end(), &first) != never.end()) {
            continue;
        }
        std::vector<std::string> cells(nsizes);
        for (size_t s = 0; s < nsizes; ++s) {
            cells[s] = cell(grid[row * nsizes + s]);
        }
        print_row(out, first.algo->name, name_width, cells, widths);
    }
    if (never.size() * nsizes == grid.size()) {
        out << "  (no algorithm applies)\n";
    }
    for (const prediction* p : never) {
        out << not_applicable_line(*p);
    }
}

void print_grid_segments(std::ostream& out, std::span<const int64_t> sizes,
                         const std::vector<prediction>& grid) {
    const size_t nsizes = sizes.size();
    size_t name_width   = 9;
    std::vector<size_t> widths(nsizes);
    std::vector<std::string> header(nsizes);
    for (size_t s = 0; s < nsizes; ++s) {
        header[s] = format_size(sizes[s]) + " ";
        widths[s] = header[s].size();
    }
    auto p_cell = [](const prediction& p) {
        return p.applicable ? std::to_string(p.segments) + " " : std::string("n/a ");
    };
    for (size_t i = 0; i < grid.size(); ++i) {
        name_width         = std::max(name_width, grid[i].algo->name.size());
        widths[i % nsizes] = std::max(widths[i % nsizes], p_cell(grid[i]).size());
    }
    out << "segments P chosen (--segments auto: the least time over 1.." << max_auto_segments
        << ", at most the count)\n";
    print_row(out, "algorithm", name_width, header, widths);
    for (size_t row = 0; row * nsizes < grid.size(); ++row) {
        std::vector<std::string> cells(nsizes);
        bool any = false;
        for (size_t s = 0; s < nsizes; ++s) {
            const prediction& p = grid[row * nsizes + s];
            cells[s]            = p_cell(p);
            any                 = any || p.applicable.is_ok();
        }
        if (any) {
            print_row(out, grid[row * nsizes].algo->name, name_width, cells, widths);
        }
    }
}

std::string not_applicable_line(const prediction& p) {
    // check_call prefixes "<collective> <name>: ", which the line already says.
    std::string reason = p.applicable.message();
    std::string who    = std::string(schedule::collective_name(p.algo->primitive)) + " " +
                      std::string(p.algo->name) + ": ";
    if (reason.starts_with(who)) {
        reason.erase(0, who.size());
    }
    return "  not applicable: " + std::string(p.algo->name) + ": " + reason + "\n";
}

nlohmann::json prediction_json(const algorithms::call& base, const cost_model& model,
                               const prediction& p) {
    nlohmann::json j = {
        {"algorithm", p.algo->name},
        {"collective", schedule::collective_name(base.coll)},
        {"ranks", base.nranks},
        {"topology", base.topo.to_string()},
        {"bytes", p.bytes},
        {"segments", p.segments},
        {"alpha_s", model.alpha_s},
        {"alpha_switch_s", model.alpha_switch_s},
        {"bw_bytes_per_s", model.bw_bytes_per_s},
        {"port_model", algorithms::port_model_name(model.ports)},
        {"applicable", p.applicable.is_ok()},
    };
    if (!p.applicable) {
        j["reason"] = p.applicable.message();
        return j;
    }
    j["formula"]        = p.algo->formula;
    j["n_alpha"]        = p.cost.n_alpha;
    j["n_beta"]         = p.cost.n_beta;
    j["n_alpha_switch"] = p.cost.n_alpha_switch;
    j["time_s"]         = p.time_s;
    j["time_us"]        = p.time_s * 1e6;
    j["exact"]          = p.cost.exact;
    j["note"]           = p.cost.note;
    j["fastest"]        = p.fastest;
    return j;
}

}  // namespace loom::sim_tool
