// SPDX-License-Identifier: Apache-2.0
// The simulator's model on schedules small enough to time by hand: α per hop and bytes once
// (cut-through), FIFO sharing of a link direction in head-arrival order, full duplex, the two port
// models, the rendezvous, dimension-ordered paths, aggregation slots, efficiency, γ, the critical
// path, idle time; hand-written JSON schedules; and every kind of bad input as an error.
#include "sim/links.hh"
#include "sim_test.hh"

using namespace loom;
using algorithms::port_model;
using schedule::collective;

namespace {

schedule::schedule parse_or_fail(const std::string& text) {
    return test::value_or_fail(schedule::parse_json(text));
}

sim::report run_or_fail(const schedule::schedule& s, const sim::fabric& f) {
    return test::value_or_fail(sim::simulate(s, f));
}

sim::fabric on(const std::string& topo, port_model p = port_model::per_edge) {
    sim::fabric f = test::generic_fabric(p);
    f.topo        = topology::shape::parse(topo).value();
    return f;
}

void expect_time(const sim::report& r, double expected, const std::string& what) {
    if (!test::close_to(r.time_s, expected)) {
        LOOM_FAIL(what + ": simulated " + test::fmt(r.time_s) + " s, expected " +
                  test::fmt(expected));
    }
}

// 0 → 1 and 0 → 2 at once (no dependencies): the two ports models differ
// (docs/references.md#port-model).
const char* two_sends = R"({"format": "loom-schedule", "version": 1, "collective": "broadcast",
  "ranks": 3, "count": 1000, "schedule": [
  {"rank": 0, "steps": [{"kind": "send", "peer": 1, "src": ["in", 0, 1000]},
                        {"kind": "send", "peer": 2, "src": ["in", 0, 1000]},
                        {"kind": "local_copy", "dst": ["out", 0, 1000], "src": ["in", 0, 1000]}]},
  {"rank": 1, "steps": [{"kind": "recv", "peer": 0, "dst": ["out", 0, 1000]}]},
  {"rank": 2, "steps": [{"kind": "recv", "peer": 0, "dst": ["out", 0, 1000]}]}]})";

}  // namespace

static void one_transfer_pays_alpha_per_hop_and_bytes_once(void**) {
    const auto& a = test::find_algorithm(collective::sendrecv, "direct");
    struct shape_case {
        const char* topo;
        int src, dst, hops;
    };
    for (auto sc : {shape_case{"star:4", 1, 3, 1}, shape_case{"ring:8", 0, 4, 4},
                    shape_case{"torus:4x4", 0, 10, 4}, shape_case{"mesh:3x5", 0, 14, 6},
                    shape_case{"fullmesh:5", 4, 0, 1}}) {
        for (port_model p : {port_model::per_edge, port_model::single_port}) {
            auto f   = on(sc.topo, p);
            auto c   = test::make_call(collective::sendrecv, f.topo, 1000, sc.src);
            c.peer   = sc.dst;
            auto r   = test::simulate_call(a, c, f);
            double m = 4000;
            expect_time(r, sc.hops * f.alpha_s + m / f.bw_bytes_per_s, sc.topo);
            assert_true(test::close_to(r.n_alpha, sc.hops) && test::close_to(r.n_beta, 1));
            assert_int_equal(r.links_used,
                             (f.topo.is_lattice() || p == port_model::per_edge) ? sc.hops : 2);
        }
    }
}

static void single_port_serialises_a_ranks_sends_per_edge_does_not(void**) {
    auto s        = parse_or_fail(two_sends);
    double t_byte = 4000 / 7e9, alpha = 1.3e-6;
    auto r = run_or_fail(s, on("star:3", port_model::per_edge));
    expect_time(r, alpha + t_byte, "per-edge");
    r = run_or_fail(s, on("star:3", port_model::single_port));
    expect_time(r, alpha + 2 * t_byte, "single-port");
    // The busiest link is rank 0's port, busy for both messages.
    assert_string_equal(r.top_links[0].name.c_str(), "0->switch");
    assert_int_equal(r.top_links[0].bytes, 8000);
    assert_true(test::close_to(r.top_links[0].utilisation, 2 * t_byte / r.time_s));
    // The second send waited for the port: the chain goes back through the link.
    assert_true(r.chain.back().why == sim::gate::link);
    assert_string_equal(r.chain.back().link.c_str(), "0->switch");
    assert_int_equal(r.chain.size(), 2);
}

static void a_link_direction_is_fifo_and_full_duplex(void**) {
    // Two messages 0 → 1 on one per-edge link (tags 0 and 1) and one 1 → 0 at the same time.
    auto s    = parse_or_fail(R"({"format": "loom-schedule", "version": 1, "collective":
      "allreduce", "ranks": 2, "count": 500, "schedule": [
      {"rank": 0, "scratch": 1000, "steps": [
        {"kind": "send", "peer": 1, "src": ["in", 0, 500]},
        {"kind": "send", "peer": 1, "tag": 1, "src": ["in", 0, 500]},
        {"kind": "recv", "peer": 1, "dst": ["out", 0, 500]}]},
      {"rank": 1, "scratch": 1000, "steps": [
        {"kind": "recv", "peer": 0, "dst": ["tmp", 0, 500]},
        {"kind": "recv", "peer": 0, "tag": 1, "dst": ["tmp", 500, 500]},
        {"kind": "send", "peer": 0, "src": ["in", 0, 500]}]}]})");
    auto r    = run_or_fail(s, on("star:2"));
    double tb = 2000 / 7e9;
    expect_time(r, 1.3e-6 + 2 * tb, "two messages on one link");
    assert_string_equal(r.top_links[0].name.c_str(), "0->1");
    assert_int_equal(r.top_links[0].messages, 2);
    assert_string_equal(r.top_links[1].name.c_str(), "1->0");
    assert_true(test::close_to(r.n_alpha, 1) && test::close_to(r.n_beta, 2));
    assert_int_equal(r.last_rank >= 0, 1);
}

static void a_link_serves_heads_in_arrival_order(void**) {
    // ring:4: 0 → 2 crosses 0→1 then 1→2; 1 → 2 crosses 1→2 only. 0 → 2 starts first (rank
    // 2 receives from 0 first), but 1 → 2's head reaches 1→2 at once and 0 → 2's only after
    // α: 1 → 2 has the link first, and 0 → 2 waits for it only while its bytes last.
    for (int count : {1000, 10000}) {
        std::string n = std::to_string(count);
        auto s        = parse_or_fail(R"({"format": "loom-schedule", "version": 1, "collective":
          "allreduce", "ranks": 4, "count": )" +
                                      n + R"(, "schedule": [
          {"rank": 0, "steps": [{"kind": "send", "peer": 2, "src": ["in", 0, )" +
                                      n + R"(]}]},
          {"rank": 1, "steps": [{"kind": "send", "peer": 2, "src": ["in", 0, )" +
                                      n + R"(]}]},
          {"rank": 2, "scratch": )" +
                                      n + R"(, "steps": [
            {"kind": "recv", "peer": 0, "dst": ["out", 0, )" +
                                      n + R"(]},
            {"kind": "recv", "peer": 1, "dst": ["tmp", 0, )" +
                                      n + R"(]}]},
          {"rank": 3, "steps": []}]})");
        auto r        = run_or_fail(s, on("ring:4"));
        double alpha = 1.3e-6, tb = count * 4 / 7e9;
        bool waits      = tb > alpha;  // 10000: 1→2 is still busy when 0 → 2's head arrives
        double expected = waits ? tb + alpha + tb : 2 * alpha + tb;
        expect_time(r, expected, "0 -> 2 behind 1 -> 2, " + n + " elements");
        assert_int_equal(r.last_rank, 0);
        if (waits) {  // the chain goes back through 1→2 to 1 → 2
            assert_true(r.chain.back().why == sim::gate::link);
            assert_string_equal(r.chain.back().link.c_str(), "1->2");
            assert_int_equal(r.chain.size(), 2);
            assert_int_equal(r.chain[0].rank, 1);
        } else {
            assert_true(r.chain.back().why != sim::gate::link);
        }
    }
}

static void critical_path_through_link_waits_reaches_the_start(void**) {
    // Recursive doubling and Rabenseifner on a ring and a torus, 64 MiB: multi-hop transfers
    // wait behind each other, and two transfers can each wait for the other on different
    // links. The walk follows each wait to what held the blocker back before it took that
    // link, so it goes back in time and ends at a step ready at the start.
    for (const char* topo : {"ring:16", "torus:4x4"}) {
        for (const char* name : {"recursive-doubling", "rabenseifner"}) {
            const auto& a = test::find_algorithm(collective::allreduce, name);
            auto f        = on(topo);
            auto r =
                test::simulate_call(a, test::make_call(collective::allreduce, f.topo, 16 << 20), f);
            bool waited = false;
            for (const auto& c : r.chain) {
                waited = waited || c.why == sim::gate::link;
            }
            if (r.chain.empty() || r.chain.front().why != sim::gate::none || !waited ||
                static_cast<int64_t>(r.chain.size()) > r.steps) {
                LOOM_FAIL(std::string(name) + " on " + topo + ": critical path of " +
                          std::to_string(r.chain.size()) + " steps (of " + std::to_string(r.steps) +
                          ")");
            }
        }
    }
}

static void a_transfer_starts_when_both_sides_are_ready(void**) {
    // Rank 1 first receives from 2, then from 0; rank 0's send is ready at once but must
    // wait for rank 1's second receive (rendezvous).
    auto s = parse_or_fail(R"({"format": "loom-schedule", "version": 1, "collective":
      "allreduce", "ranks": 3, "count": 100, "schedule": [
      {"rank": 0, "steps": [{"kind": "send", "peer": 1, "src": ["in", 0, 100]}]},
      {"rank": 1, "scratch": 100, "steps": [
        {"kind": "recv", "peer": 2, "dst": ["tmp", 0, 100]},
        {"kind": "recv", "peer": 0, "dst": ["out", 0, 100], "deps": [0]}]},
      {"rank": 2, "steps": [{"kind": "send", "peer": 1, "src": ["in", 0, 100]}]}]})");
    auto r = run_or_fail(s, on("star:3"));
    expect_time(r, 2 * (1.3e-6 + 400 / 7e9), "two transfers in sequence");
    assert_int_equal(r.chain.size(), 2);
    // 2 → 1 first (whichever side the walk reached), ready at time 0.
    const auto& first = r.chain[0];
    assert_true((first.rank == 2 && first.peer == 1) || (first.rank == 1 && first.peer == 2));
    assert_true(r.chain[0].why == sim::gate::none);
    assert_true(r.chain[1].why == sim::gate::own || r.chain[1].why == sim::gate::partner);
    // Rank 0 waits idle for the first transfer; rank 1 is never idle.
    assert_true(test::close_to(r.idle_s[0], 1.3e-6 + 400 / 7e9));
    assert_true(r.idle_s[1] == 0);
}

static void lattice_paths_are_routing_routes(void**) {
    for (const char* text : {"torus:4x4", "torus:3x4x2", "mesh:3x5", "ring:8", "ring:7",
                             "torus:2x2x2", "torus:6x1x4", "mesh:4x4x2", "torus:6x6"}) {
        for (auto ties : {routing::tie_rule::toward_plus, routing::tie_rule::source_parity}) {
            sim::fabric f = on(text);
            f.ties        = ties;
            sim::detail::link_table links;
            assert_true(links.init(f, f.topo.size()).is_ok());
            std::vector<sim::detail::hop> path;
            size_t longest = 0;  // max_hops() is the longest path (the engine's pool stride)
            for (int a = 0; a < f.topo.size(); ++a) {
                for (int b = 0; b < f.topo.size(); ++b) {
                    if (a == b) {
                        continue;
                    }
                    links.path(a, b, path);
                    longest   = std::max(longest, path.size());
                    auto want = routing::route(f.topo, a, b, ties);
                    std::vector<int> got{a};
                    for (const auto& h : path) {
                        const auto& l = links[h.link];
                        if (l.from != got.back()) {
                            LOOM_FAIL(std::string(text) + ": path is not connected");
                        }
                        got.push_back(l.to);
                    }
                    if (got != want) {
                        LOOM_FAIL(std::string(text) + ": path " + std::to_string(a) + " -> " +
                                  std::to_string(b) + " differs from routing::route");
                    }
                }
            }
            assert_int_equal(links.max_hops(), longest);
        }
    }
}

static void aggregation_slot_sums_then_multicasts_after_the_alu(void**) {
    std::string text = R"({"format": "loom-schedule", "version": 1, "collective": "allreduce",
      "ranks": 3, "count": 8, "schedule": [)";
    for (int r = 0; r < 3; ++r) {
        text += std::string(r ? "," : "") + R"({"rank": )" + std::to_string(r) + R"(, "steps": [
          {"kind": "inc_push", "peer": 3, "tag": 5, "src": ["in", 0, 8]},
          {"kind": "inc_pull", "peer": 3, "tag": 5, "dst": ["out", 0, 8], "deps": [0]}]})";
    }
    text += "]}";
    auto s = parse_or_fail(text);
    for (port_model p : {port_model::per_edge, port_model::single_port}) {
        sim::fabric f   = on("star:3", p);
        f.alu_latency_s = 5e-7;
        auto r          = run_or_fail(s, f);
        double hop      = f.alpha_s + 32 / f.bw_bytes_per_s;
        expect_time(r, 2 * hop + f.alu_latency_s, "push, ALU, pull");
        assert_true(test::close_to(r.n_alpha, 2) && test::close_to(r.n_beta, 2));
        assert_true(test::close_to(r.other_s, f.alu_latency_s));
        assert_int_equal(r.chain.size(), 2);
        assert_true(r.chain[1].kind == schedule::step_kind::inc_pull);
        assert_true(r.chain[1].why == sim::gate::slot);
        assert_true(r.chain[0].kind == schedule::step_kind::inc_push);
        assert_true(r.last_link.find("->") != std::string::npos);
    }
    // Two slots: each rank's second push waits for its link behind the first (the gate
    // then names the link, and the push still lands in its own slot).
    text = R"({"format": "loom-schedule", "version": 1, "collective": "allreduce",
      "ranks": 3, "count": 8, "schedule": [)";
    for (int r = 0; r < 3; ++r) {
        text += std::string(r ? "," : "") + R"({"rank": )" + std::to_string(r) + R"(, "steps": [
          {"kind": "inc_push", "peer": 3, "tag": 5, "src": ["in", 0, 4]},
          {"kind": "inc_push", "peer": 3, "tag": 6, "src": ["in", 4, 4]},
          {"kind": "inc_pull", "peer": 3, "tag": 5, "dst": ["out", 0, 4], "deps": [0]},
          {"kind": "inc_pull", "peer": 3, "tag": 6, "dst": ["out", 4, 4], "deps": [1]}]})";
    }
    text += "]}";
    s = parse_or_fail(text);
    for (port_model p : {port_model::per_edge, port_model::single_port}) {
        sim::fabric f   = on("star:3", p);
        f.alu_latency_s = 5e-7;
        auto r          = run_or_fail(s, f);
        double tb       = 16 / f.bw_bytes_per_s;
        // Push 6 lands at α + 2tb; its pull starts after the ALU, as pull 5 frees the link.
        expect_time(r, 2 * f.alpha_s + 3 * tb + f.alu_latency_s, "two slots, pushes in turn");
        // Pull 6 ← slot 6 ← push 6, which waited on the link ← push 5, ready at the start.
        assert_true(r.chain.size() >= 3);
        assert_true(r.chain[0].kind == schedule::step_kind::inc_push &&
                    r.chain[0].why == sim::gate::none);
        assert_true(r.chain[1].kind == schedule::step_kind::inc_push &&
                    r.chain[1].why == sim::gate::link);
    }
}

static void efficiency_and_gamma_scale_their_parts(void**) {
    const auto& a = test::find_algorithm(collective::sendrecv, "direct");
    sim::fabric f = on("star:2");
    f.efficiency  = 0.8;
    auto c        = test::make_call(collective::sendrecv, 2, 1000, 0);
    c.peer        = 1;
    auto r        = test::simulate_call(a, c, f);
    expect_time(r, f.alpha_s + 4000 / (0.8 * f.bw_bytes_per_s), "efficiency 0.8");
    assert_true(test::close_to(r.n_beta, 1.25));
    // γ charges local steps only: a local copy of 4000 bytes before the send.
    auto s             = parse_or_fail(R"({"format": "loom-schedule", "version": 1, "collective":
      "sendrecv", "ranks": 2, "count": 1000, "peer": 1, "schedule": [
      {"rank": 0, "scratch": 1000, "steps": [
        {"kind": "local_copy", "dst": ["tmp", 0, 1000], "src": ["in", 0, 1000]},
        {"kind": "send", "peer": 1, "src": ["tmp", 0, 1000], "deps": [0]}]},
      {"rank": 1, "steps": [{"kind": "recv", "peer": 0, "dst": ["out", 0, 1000]}]}]})");
    sim::fabric g      = on("star:2");
    g.gamma_s_per_byte = 1e-10;
    r                  = run_or_fail(s, g);
    expect_time(r, 4000 * 1e-10 + g.alpha_s + 4000 / g.bw_bytes_per_s, "γ then a transfer");
    assert_true(test::close_to(r.other_s, 4000 * 1e-10));
    assert_int_equal(r.chain.size(), 2);
}

static void ring_allreduce_critical_path_and_link_statistics(void**) {
    const auto& a = test::find_algorithm(collective::allreduce, "ring");
    auto c        = test::make_call(collective::allreduce, 4, 400);
    auto r        = test::simulate_call(a, c, on("star:4"));
    // 6 steps of α + M/4 each; every rank always has a transfer in flight.
    assert_int_equal(r.chain.size(), 6);
    for (size_t k = 1; k < r.chain.size(); ++k) {
        assert_true(r.chain[k].kind == schedule::step_kind::send ||
                    schedule::is_receive(r.chain[k].kind));
        assert_int_equal(r.chain[k].bytes, 400);
    }
    assert_int_equal(r.links_used, 4);
    assert_int_equal(r.top_links.size(), 4);
    for (const auto& l : r.top_links) {
        assert_int_equal(l.bytes, 6 * 400);
        assert_int_equal(l.messages, 6);
    }
    for (double idle : r.idle_s) {
        assert_true(idle < 1e-15);
    }
    assert_int_equal(r.transfers, 24);
    assert_int_equal(r.link_bytes, 24 * 400);
    assert_true(!r.last_link.empty());
}

static void binomial_leaves_idle_until_their_round(void**) {
    const auto& a = test::find_algorithm(collective::broadcast, "binomial");
    auto c        = test::make_call(collective::broadcast, 4, 1000);
    auto f        = on("star:4");
    auto r        = test::simulate_call(a, c, f);
    double round  = f.alpha_s + 4000 / f.bw_bytes_per_s;
    expect_time(r, 2 * round, "binomial broadcast N=4");
    // Round 1: 0 → 1; round 2: 0 → 2 and 1 → 3 (Lu-CA §3.2).
    assert_true(r.idle_s[0] < 1e-15 && r.idle_s[1] < 1e-15);
    assert_true(test::close_to(r.idle_s[2], round) && test::close_to(r.idle_s[3], round));
}

static void hand_written_json_schedule_runs(void**) {
    auto s = parse_or_fail(R"({
      "format": "loom-schedule", "version": 1, "collective": "allreduce", "ranks": 2,
      "count": 8, "schedule": [
        {"rank": 0, "steps": [
          {"kind": "send", "peer": 1, "src": ["in", 0, 8]},
          {"kind": "recv_reduce", "peer": 1, "dst": ["out", 0, 8], "src": ["in", 0, 8]}]},
        {"rank": 1, "steps": [
          {"kind": "recv_reduce", "peer": 0, "dst": ["out", 0, 8], "src": ["in", 0, 8]},
          {"kind": "send", "peer": 0, "src": ["in", 0, 8]}]}]})");
    auto r = run_or_fail(s, on("star:2"));
    expect_time(r, 1.3e-6 + 32 / 7e9, "exchange of 8 floats");
    assert_int_equal(r.steps, 4);
    assert_int_equal(r.transfers, 2);
    assert_true(test::close_to(r.payload_bytes, 32));
}

static void expect_error(const result<sim::report>& r, const std::string& must_contain) {
    if (r) {
        LOOM_FAIL("expected an error containing '" + must_contain + "', the run succeeded");
    }
    loom::test::expect_has(r.error().message(), must_contain);
}

static void bad_input_is_an_error_that_says_why(void**) {
    // Counts that do not match: the verifier's message first, the simulator's own without it.
    auto mismatch = parse_or_fail(R"({"format": "loom-schedule", "version": 1, "collective":
      "sendrecv", "ranks": 2, "count": 8, "peer": 1, "schedule": [
      {"rank": 0, "steps": [{"kind": "send", "peer": 1, "src": ["in", 0, 8]}]},
      {"rank": 1, "steps": [{"kind": "recv", "peer": 0, "dst": ["out", 0, 4]}]}]})");
    expect_error(sim::simulate(mismatch, on("star:2")), "expects 4");
    sim::options raw;
    raw.verify_first = false;
    expect_error(sim::simulate(mismatch, on("star:2"), raw), "sends 8 elements");
    // Both ranks receive first: a deadlock, named.
    auto dead = parse_or_fail(R"({"format": "loom-schedule", "version": 1, "collective":
      "allreduce", "ranks": 2, "count": 4, "schedule": [
      {"rank": 0, "steps": [{"kind": "recv", "peer": 1, "dst": ["out", 0, 4]},
                            {"kind": "send", "peer": 1, "src": ["in", 0, 4], "deps": [0]}]},
      {"rank": 1, "steps": [{"kind": "recv", "peer": 0, "dst": ["out", 0, 4]},
                            {"kind": "send", "peer": 0, "src": ["in", 0, 4], "deps": [0]}]}]})");
    expect_error(sim::simulate(dead, on("star:2")), "deadlock");
    expect_error(sim::simulate(dead, on("star:2"), raw), "deadlock");
    // The fabric.
    auto good = parse_or_fail(two_sends);
    auto bad  = [&](auto change, const std::string& why) {
        sim::fabric f = on("star:3");
        change(f);
        expect_error(sim::simulate(good, f), why);
    };
    bad([](sim::fabric& f) { f.efficiency = 0; }, "efficiency");
    bad([](sim::fabric& f) { f.efficiency = 1.5; }, "efficiency");
    bad([](sim::fabric& f) { f.bw_bytes_per_s = 0; }, "bandwidth");
    bad([](sim::fabric& f) { f.alpha_s = -1e-6; }, "α");
    bad([](sim::fabric& f) { f.alu_latency_s = std::nan(""); }, "ALU");
    bad([](sim::fabric& f) { f.gamma_s_per_byte = -1; }, "γ");
    bad([](sim::fabric& f) { f.topo = topology::shape::star(4); }, "has 4 ranks");
    // An algorithm the call does not fit.
    const auto& dims = test::find_algorithm(collective::allreduce, "dims");
    auto r = sim::simulate(dims, test::make_call(collective::allreduce, 4, 4), on("star:4"));
    assert_false(r.is_ok());
    assert_int_equal(r.error().code(), LOOM_ERR_NOT_APPLICABLE);
}

LOOM_TEST_MAIN("fabric_sim_core", cmocka_unit_test(one_transfer_pays_alpha_per_hop_and_bytes_once),
               cmocka_unit_test(single_port_serialises_a_ranks_sends_per_edge_does_not),
               cmocka_unit_test(a_link_direction_is_fifo_and_full_duplex),
               cmocka_unit_test(a_link_serves_heads_in_arrival_order),
               cmocka_unit_test(critical_path_through_link_waits_reaches_the_start),
               cmocka_unit_test(a_transfer_starts_when_both_sides_are_ready),
               cmocka_unit_test(lattice_paths_are_routing_routes),
               cmocka_unit_test(aggregation_slot_sums_then_multicasts_after_the_alu),
               cmocka_unit_test(efficiency_and_gamma_scale_their_parts),
               cmocka_unit_test(ring_allreduce_critical_path_and_link_statistics),
               cmocka_unit_test(binomial_leaves_idle_until_their_round),
               cmocka_unit_test(hand_written_json_schedule_runs),
               cmocka_unit_test(bad_input_is_an_error_that_says_why))
