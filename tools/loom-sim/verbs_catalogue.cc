// SPDX-License-Identifier: Apache-2.0
// loom-sim algorithms: the catalogue (algorithms::catalogue()), every algorithm with its
// primitive, summary, constraints and cost formula, as text or JSON. Generic over the
// catalogue: a family that registers more algorithms shows up here with no change.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/check.hh"
#include "loom_sim.hh"

namespace loom::sim_tool {
namespace {

struct catalogue_flags {
    bool json = false;
    std::string collective;  // optional filter
};

result<std::vector<const algorithms::algorithm*>> selected(const catalogue_flags& f) {
    std::vector<const algorithms::algorithm*> out;
    schedule::collective only{};
    if (!f.collective.empty()) {
        LOOM_ASSIGN(only, parse_collective_flag(f.collective));
    }
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        if (f.collective.empty() || a->primitive == only) {
            out.push_back(a);
        }
    }
    return out;
}

void print_json(const std::vector<const algorithms::algorithm*>& list) {
    auto doc = nlohmann::json::array();
    for (const algorithms::algorithm* a : list) {
        doc.push_back({{"name", a->name},
                       {"collective", schedule::collective_name(a->primitive)},
                       {"summary", a->summary},
                       {"formula", a->formula},
                       {"constraints", a->constraints}});
    }
    std::cout << doc.dump(2) << '\n';
}

// Grouped by primitive (the catalogue is already in primitive order).
void print_text(const std::vector<const algorithms::algorithm*>& list) {
    size_t width = 0;
    for (const algorithms::algorithm* a : list) {
        width = std::max(width, a->name.size());
    }
    const std::string indent(width + 4, ' ');
    bool first = true;
    schedule::collective current{};
    for (const algorithms::algorithm* a : list) {
        if (first || a->primitive != current) {
            std::cout << (first ? "" : "\n") << schedule::collective_name(a->primitive) << '\n';
            current = a->primitive;
            first   = false;
        }
        std::string name(a->name);
        name.resize(width, ' ');
        std::cout << "  " << name << "  " << a->summary << '\n'
                  << indent << "cost: " << a->formula << '\n'
                  << indent << "constraints: " << a->constraints << '\n';
    }
    std::cout << '\n'
              << list.size() << " algorithms. Cost: t = n_alpha·α + n_beta·M/BW, M = the "
              << "vector each rank holds (all-to-all: the whole send buffer).\n";
}

status run_algorithms(const catalogue_flags& f) {
    LOOM_ASSIGN(auto list, selected(f));
    if (f.json) {
        print_json(list);
    } else {
        print_text(list);
    }
    return status::ok();
}

}  // namespace

void add_catalogue_verbs(CLI::App& app, std::vector<verb>& verbs) {
    auto flags = std::make_shared<catalogue_flags>();
    CLI::App* cmd =
        app.add_subcommand("algorithms", "list every algorithm: primitive, constraints, cost");
    cmd->add_flag("--json", flags->json,
                  "one JSON array of {name, collective, summary, "
                  "formula, constraints}");
    cmd->add_option("--collective", flags->collective, "only this primitive")->type_name("C");
    verbs.push_back({cmd, [flags] { return run_algorithms(*flags); }});
}

}  // namespace loom::sim_tool
