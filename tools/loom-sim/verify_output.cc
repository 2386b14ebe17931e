// SPDX-License-Identifier: Apache-2.0
// loom-sim verify's output: the one-line summary, the --stats block and the JSON object.
//
// Observed figures come from schedule::schedule_stats (verifier.hh): rounds is the observed
// n_alpha, edge_bytes = n_beta·M under the per-edge port model, port_bytes = n_beta·M under
// the single-port model. When the schedule names a catalogue algorithm its own predict() is
// shown beside them; with channels > 1 the prediction is for one channel's slice and is left
// out rather than shown against the wrong number.
#include <algorithm>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "loom_sim.hh"

namespace loom::sim_tool {
namespace {

using algorithms::port_model;

struct predicted_costs {
    algorithms::cost per_edge;
    algorithms::cost single_port;
};

std::optional<predicted_costs> predicted(const schedule::schedule& s) {
    const algorithms::algorithm* a = algorithms::find(s.info.coll, s.info.algorithm);
    if (a == nullptr || s.info.channels != 1) {
        return std::nullopt;
    }
    algorithms::call c;
    c.coll       = s.info.coll;
    c.nranks     = s.info.nranks;
    c.count      = s.info.count;
    c.dtype_size = s.info.dtype_size;
    c.root       = s.info.root;
    c.peer       = s.info.peer;
    c.segments   = s.info.segments;
    c.topo       = topology::shape::star(c.nranks);
    if (!s.info.topology.empty()) {
        auto shape = topology::shape::parse(s.info.topology);
        if (!shape) {
            return std::nullopt;
        }
        c.topo = std::move(shape).value();
    }
    if (!algorithms::check_call(*a, c)) {
        return std::nullopt;
    }
    double m = schedule::payload_bytes(s.info);
    return predicted_costs{a->predict(algorithms::query_for(c, m, port_model::per_edge)),
                           a->predict(algorithms::query_for(c, m, port_model::single_port))};
}

std::string describe_call(const schedule::schedule_info& info) {
    std::string out(schedule::collective_name(info.coll));
    if (!info.algorithm.empty()) {
        out += " " + info.algorithm;
    }
    if (!info.topology.empty()) {
        out += " on " + info.topology;
    }
    return out + " (" + std::to_string(info.nranks) + " ranks, count " +
           std::to_string(info.count) + " x " + std::to_string(info.dtype_size) + " B)";
}

int max_peers(const schedule::schedule_stats& st) {
    int peers = 0;
    for (const auto& r : st.per_rank) {
        peers = std::max(peers, r.max_concurrent_peers);
    }
    return peers;
}

// "= 1.5 M" when M > 0: the observed n_beta (ASCII, to keep the column).
std::string times_m(double bytes, double m) {
    return m > 0 ? "= " + format_number(bytes / m) + " M" : "";
}

void print_rank_table(std::ostream& out, const schedule::schedule_stats& st) {
    out << "\n  rank   steps   sends  receives  bytes_sent  bytes_received  peers/round\n";
    for (size_t r = 0; r < st.per_rank.size(); ++r) {
        const auto& x = st.per_rank[r];
        out << std::setw(6) << r << std::setw(8) << x.steps << std::setw(8) << x.sends
            << std::setw(10) << x.receives << std::setw(12) << x.bytes_sent << std::setw(16)
            << x.bytes_received << std::setw(13) << x.max_concurrent_peers << '\n';
    }
}

// Sorted by (source, destination): the unordered map's order is not stable across runs.
std::vector<std::pair<uint64_t, int64_t>> sorted_pairs(const schedule::schedule_stats& st) {
    std::vector<std::pair<uint64_t, int64_t>> pairs(st.pair_bytes.begin(), st.pair_bytes.end());
    std::sort(pairs.begin(), pairs.end());
    return pairs;
}

}  // namespace

std::string verify_summary(const schedule::schedule& s, const schedule::schedule_stats& st) {
    int64_t max_sent = 0, max_received = 0, max_steps = 0;
    for (const auto& r : st.per_rank) {
        max_sent     = std::max(max_sent, r.bytes_sent);
        max_received = std::max(max_received, r.bytes_received);
        max_steps    = std::max(max_steps, r.steps);
    }
    std::ostringstream out;
    out << "ok: " << describe_call(s.info) << ": " << st.rounds
        << (st.rounds == 1 ? " round" : " rounds") << ", bytes per rank max " << max_sent
        << " sent / " << max_received << " received, " << st.total_steps
        << (st.total_steps == 1 ? " step" : " steps") << " (max " << max_steps << " per rank)";
    return out.str();
}

void print_verify_stats(std::ostream& out, const schedule::schedule& s,
                        const schedule::schedule_stats& st, bool pairs) {
    double m  = schedule::payload_bytes(s.info);
    auto pred = predicted(s);
    // label, observed, and the prediction beside it when there is one (ASCII labels: setw
    // counts bytes).
    auto line = [&out](const char* label, const std::string& value, const std::string& beside) {
        out << "  " << std::left << std::setw(38) << label;
        if (beside.empty()) {
            out << value << std::right << '\n';
        } else {
            out << std::setw(26) << value << "  " << std::right << beside << '\n';
        }
    };
    auto predicted_text = [&pred](const char* what, double x) {
        return pred ? std::string("predicted ") + what + " " + format_number(x) : std::string();
    };
    line("payload M (bytes)", format_number(m), "");
    line("rounds on the critical path", std::to_string(st.rounds),
         predicted_text("n_alpha", pred ? pred->per_edge.n_alpha : 0));
    line("per-edge bytes (sum of max transfer)",
         format_number(st.edge_bytes) + " " + times_m(st.edge_bytes, m),
         predicted_text("n_beta", pred ? pred->per_edge.n_beta : 0));
    line("single-port bytes (sum of busiest)",
         format_number(st.port_bytes) + " " + times_m(st.port_bytes, m),
         predicted_text("n_beta", pred ? pred->single_port.n_beta : 0));
    line("max concurrent peers of a rank", std::to_string(max_peers(st)), "");
    line("total",
         std::to_string(st.total_steps) + " steps, " + std::to_string(st.total_bytes) +
             " bytes sent",
         "");
    if (pred && !pred->per_edge.note.empty()) {
        out << "  (prediction: " << s.info.algorithm << ", " << pred->per_edge.note << ")\n";
    }
    print_rank_table(out, st);
    if (pairs) {
        out << "\n   src    dst       bytes\n";
        for (auto [key, bytes] : sorted_pairs(st)) {
            out << std::setw(6) << (key >> 32) << std::setw(7) << (key & 0xffffffffu)
                << std::setw(12) << bytes << '\n';
        }
    }
}

nlohmann::json verify_json(const schedule::schedule& s, const schedule::schedule_stats& st,
                           bool pairs) {
    nlohmann::json j = {
        {"ok", true},
        {"collective", schedule::collective_name(s.info.coll)},
        {"algorithm", s.info.algorithm},
        {"topology", s.info.topology},
        {"ranks", s.info.nranks},
        {"count", s.info.count},
        {"dtype_size", s.info.dtype_size},
        {"payload_bytes", schedule::payload_bytes(s.info)},
        {"rounds", st.rounds},
        {"edge_bytes", st.edge_bytes},
        {"port_bytes", st.port_bytes},
        {"total_steps", st.total_steps},
        {"total_bytes", st.total_bytes},
        {"max_concurrent_peers", max_peers(st)},
    };
    auto ranks = nlohmann::json::array();
    for (size_t r = 0; r < st.per_rank.size(); ++r) {
        const auto& x = st.per_rank[r];
        ranks.push_back({{"rank", r},
                         {"steps", x.steps},
                         {"sends", x.sends},
                         {"receives", x.receives},
                         {"bytes_sent", x.bytes_sent},
                         {"bytes_received", x.bytes_received},
                         {"max_concurrent_peers", x.max_concurrent_peers}});
    }
    j["per_rank"] = std::move(ranks);
    if (auto pred = predicted(s)) {
        j["predicted"] = {{"n_alpha", pred->per_edge.n_alpha},
                          {"n_beta_per_edge", pred->per_edge.n_beta},
                          {"n_beta_single_port", pred->single_port.n_beta},
                          {"exact", pred->per_edge.exact},
                          {"note", pred->per_edge.note}};
    }
    if (pairs) {
        auto list = nlohmann::json::array();
        for (auto [key, bytes] : sorted_pairs(st)) {
            list.push_back({{"src", key >> 32}, {"dst", key & 0xffffffffu}, {"bytes", bytes}});
        }
        j["pairs"] = std::move(list);
    }
    return j;
}

}  // namespace loom::sim_tool
