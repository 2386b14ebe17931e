// SPDX-License-Identifier: Apache-2.0
// The tuner's pure parts: the calibration file (round trip, look-up, atomic replace keeping
// other lines, malformed lines named, the record of a measurement, an unwritable file), the
// judge of figures (bounds, spread, shm against tcp, staleness, load), the ranking (sorted by
// predicted time, equal to the closed forms, exclusions with their reasons, in-network
// availability), the size buckets and the decision cache, and the explanation text.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "sweep.hh"
#include "test_main.hh"
#include "tuner/calibration_checks.hh"
#include "tuner/tuner.hh"

using namespace loom;
using schedule::collective;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

tuner::machine_params params(double alpha_us, double bw_gbps) {
    tuner::machine_params p;
    p.host               = "hostA";
    p.transport          = "shm";
    p.alpha_s            = alpha_us * 1e-6;
    p.bw_bytes_per_s     = bw_gbps * 1e9;
    p.reduce_bytes_per_s = 0;  // the α-β forms alone, unless a test says otherwise
    return p;
}

const tuner::candidate* find(const tuner::ranking& r, std::string_view name) {
    auto at =
        std::ranges::find_if(r.candidates, [&](const auto& k) { return k.algo->name == name; });
    return at == r.candidates.end() ? nullptr : &*at;
}

}  // namespace

static void calibration_line_round_trips(void**) {
    tuner::machine_params p = params(2.5, 7.25);
    p.reduce_bytes_per_s    = 11e9;
    p.alpha_switch_s        = 0.15e-6;
    p.source                = "measured";
    auto back               = tuner::from_line(tuner::to_line(p));
    assert_true(back.is_ok());
    assert_string_equal(back->host.c_str(), "hostA");
    assert_string_equal(back->transport.c_str(), "shm");
    assert_true(std::fabs(back->alpha_s - 2.5e-6) < 1e-12);
    assert_true(std::fabs(back->bw_bytes_per_s - 7.25e9) < 1);
    assert_true(std::fabs(back->reduce_bytes_per_s - 11e9) < 1);
    assert_true(std::fabs(back->alpha_switch_s - 0.15e-6) < 1e-12);
    assert_string_equal(back->source.c_str(), "measured");
}

static void calibration_cost_classes(void**) {
    assert_string_equal(tuner::defaults_for("tcp").transport.c_str(), "tcp");
    assert_string_equal(tuner::defaults_for("self").transport.c_str(), "self");
    assert_true(tuner::defaults_for("tcp").alpha_s > tuner::defaults_for("shm").alpha_s);
    assert_true(tuner::defaults_for("shm").alpha_s > tuner::defaults_for("self").alpha_s);
    assert_string_equal(tuner::calibration_path("x.txt", "/c", "/h").c_str(), "x.txt");
    assert_string_equal(tuner::calibration_path("", "/c", "/h").c_str(), "/c/loom/calibration.txt");
    assert_string_equal(tuner::calibration_path("", "", "/h").c_str(),
                        "/h/.cache/loom/calibration.txt");
}

static void calibration_save_keeps_other_lines(void**) {
    std::string path = test::temp_path("tuner", "save.txt");
    std::remove(path.c_str());
    auto none = tuner::load(path, "hostA", "shm");
    assert_true(none.is_ok() && !none->has_value());  // no file: not calibrated, no error

    tuner::machine_params a = params(1, 1), b = params(2, 2), c = params(3, 3);
    b.transport = "tcp";
    c.host      = "hostB";
    assert_true(tuner::save(path, a).is_ok());
    assert_true(tuner::save(path, b).is_ok());
    assert_true(tuner::save(path, c).is_ok());
    tuner::machine_params a2 = params(4, 4);  // replaces hostA/shm only
    assert_true(tuner::save(path, a2).is_ok());

    auto got_a = tuner::load(path, "hostA", "shm");
    auto got_b = tuner::load(path, "hostA", "tcp");
    auto got_c = tuner::load(path, "hostB", "shm");
    assert_true(got_a.is_ok() && got_a->has_value() && got_b.is_ok() && got_b->has_value() &&
                got_c.is_ok() && got_c->has_value());
    assert_true(std::fabs((*got_a)->alpha_s - 4e-6) < 1e-12);
    assert_true(std::fabs((*got_b)->alpha_s - 2e-6) < 1e-12);
    assert_true(std::fabs((*got_c)->alpha_s - 3e-6) < 1e-12);
    assert_string_equal((*got_a)->source.c_str(), "file");
    assert_int_equal(std::ranges::count(read_all(path), '\n'),
                     2 + 3);  // two comment lines, three parameter lines
    std::remove(path.c_str());
}

// A measured line records when and how it was measured, and reads back the same.
static void calibration_records_how_it_measured(void**) {
    tuner::machine_params p = params(2.5, 7.25);
    p.source                = "measured";
    p.date                  = "2026-01-02T03:04:05Z";
    p.load1                 = 0.75;
    p.cpus                  = 8;
    p.repeats               = 3;
    p.spread                = 0.125;
    p.version               = "0.1.0";
    p.method                = "calibrate";
    std::string line        = tuner::to_line(p);
    auto back               = tuner::from_line(line);
    assert_true(back.is_ok());
    assert_string_equal(back->date.c_str(), "2026-01-02T03:04:05Z");
    assert_true(std::fabs(back->load1 - 0.75) < 1e-9 && back->cpus == 8);
    assert_true(back->repeats == 3 && std::fabs(back->spread - 0.125) < 1e-9);
    assert_string_equal(back->version.c_str(), "0.1.0");
    assert_string_equal(back->method.c_str(), "calibrate");
    // An unreadable record is no reason to refuse the figures.
    auto odd = tuner::from_line("host=a transport=shm alpha_us=1 bw_GBps=2 load1=x cpus=-1");
    assert_true(odd.is_ok() && odd->load1 < 0 && odd->cpus == 0);
    // A line without a date (by hand) gets today's when written.
    p.date = "";
    assert_non_null(std::strstr(tuner::to_line(p).c_str(), " date=20"));
}

// The judge of figures, case by case: bounds, spread, shared memory against the network.
static void calibration_plausibility_table(void**) {
    struct row {
        double alpha_us, bw_gbps, reduce_gbps, spread, tcp_alpha_us;
        const char* transport;
        const char* why;  // "" when plausible, else a part of the reason
    };
    const row rows[] = {
        {2, 4, 8, 0.3, -1, "shm", ""},
        {2, 4, 0, 0.3, -1, "shm", ""},  // reductions not counted
        {15, 2, 8, -1, -1, "tcp", ""},
        {0.001, 4, 8, 0.3, -1, "shm", "alpha 0.001 us is outside"},
        {80000, 4, 8, 0.3, -1, "shm", "alpha 8e+04 us is outside"},
        {2, 0.0001, 8, 0.3, -1, "shm", "bandwidth 0.0001 GB/s is outside"},
        {2, 50000, 8, 0.3, -1, "shm", "bandwidth 5e+04 GB/s is outside"},
        {2, 4, 0.0001, 0.3, -1, "shm", "reduction throughput"},
        {2, 4, 8, 2.5, -1, "shm", "differ by 250 % of their median"},
        {18, 4, 8, 0.3, 5.4, "shm",
         "shared-memory alpha 18 us exceeds this host's tcp alpha 5.4 us"},
        {5, 4, 8, 0.3, 5.4, "shm", ""},
        {18, 4, 8, 0.3, 5.4, "tcp", ""},  // the rule compares shared memory with the network
    };
    for (const row& r : rows) {
        tuner::machine_params p = params(r.alpha_us, r.bw_gbps);
        p.transport             = r.transport;
        p.reduce_bytes_per_s    = r.reduce_gbps * 1e9;
        p.repeats               = r.spread < 0 ? 0 : 3;
        p.spread                = r.spread;
        std::string why         = tuner::implausible(p, r.tcp_alpha_us * 1e-6, {});
        bool ok = *r.why == '\0' ? why.empty() : why.find(r.why) != std::string::npos;
        if (!ok) {
            LOOM_FAIL("alpha " + std::to_string(r.alpha_us) + " us, bw " +
                      std::to_string(r.bw_gbps) + ": expected '" + r.why + "', got '" + why + "'");
        }
    }
}

// Stale: a measured line older than the limit, dated in the future or unreadably; lines by
// hand never are. Busy: the load average before measuring exceeded the CPUs.
static void calibration_staleness_and_load(void**) {
    tuner::machine_params p = params(2, 4);
    p.source                = "measured";
    p.date                  = "2026-01-01T00:00:00Z";
    std::time_t jan_10      = 1767225600 + 9 * 86400;  // 2026-01-10T00:00:00Z
    assert_string_equal(tuner::stale(p, jan_10, {}).c_str(), "");
    assert_non_null(std::strstr(tuner::stale(p, jan_10 + 40 * 86400, {}).c_str(),
                                "measured 2026-01-01T00:00:00Z, 49 days ago (at most 30 days)"));
    assert_non_null(std::strstr(tuner::stale(p, jan_10 - 20 * 86400, {}).c_str(), "future"));
    p.date = "yesterday";
    assert_non_null(std::strstr(tuner::stale(p, jan_10, {}).c_str(), "'yesterday'"));
    p.source = "file-by-hand";
    assert_string_equal(tuner::stale(p, jan_10 + 400 * 86400, {}).c_str(), "");

    p.source = "measured";
    p.load1  = 11.5;
    p.cpus   = 2;
    assert_non_null(std::strstr(tuner::busy(p).c_str(), "load average 11.5 on 2 CPUs"));
    p.load1 = 1.5;
    assert_string_equal(tuner::busy(p).c_str(), "");
    p.load1 = -1;  // not recorded
    assert_string_equal(tuner::busy(p).c_str(), "");
}

// A file that cannot be written is an error naming it and the system's reason.
static void calibration_unwritable_file_is_named(void**) {
    std::string blocker = test::temp_path("tuner", "not-a-directory");
    { std::ofstream(blocker) << "a file where a directory should be\n"; }
    std::string path = blocker + "/calibration.txt";
    status st        = tuner::save(path, params(1, 1));
    assert_false(st.is_ok());
    assert_non_null(
        std::strstr(st.message().c_str(),
                    ("cannot write the calibration file " + path + ": Not a directory").c_str()));
    std::remove(blocker.c_str());
}

// α and BW depend on how many ranks share the machine: a line per rank count, and a line
// without ranks= (written by hand) for the counts that have none.
static void calibration_lines_per_rank_count(void**) {
    std::string path = test::temp_path("tuner", "ranks.txt");
    std::remove(path.c_str());
    tuner::machine_params two = params(1, 1), four = params(4, 4);
    two.ranks = 2, four.ranks = 4;
    assert_true(tuner::save(path, two).is_ok());
    assert_true(tuner::save(path, four).is_ok());
    auto got4 = tuner::load(path, "hostA", "shm", 4);
    assert_true(got4.is_ok() && got4->has_value());
    assert_true(std::fabs((*got4)->alpha_s - 4e-6) < 1e-12 && (*got4)->ranks == 4);
    auto got8 = tuner::load(path, "hostA", "shm", 8);
    assert_true(got8.is_ok() && !got8->has_value());  // not calibrated for 8 ranks
    tuner::machine_params any = params(7, 7);
    assert_true(tuner::save(path, any).is_ok());
    got8 = tuner::load(path, "hostA", "shm", 8);
    assert_true(got8.is_ok() && got8->has_value() && (*got8)->ranks == 0);
    assert_true(std::fabs((*got8)->alpha_s - 7e-6) < 1e-12);
    got4 = tuner::load(path, "hostA", "shm", 4);  // the exact line still wins
    assert_true(std::fabs((*got4)->alpha_s - 4e-6) < 1e-12);
    assert_false(tuner::from_line("host=a transport=shm ranks=2.5 alpha_us=1 bw_GBps=1").is_ok());
    std::remove(path.c_str());
}

static void calibration_malformed_line_is_named(void**) {
    std::string path = test::temp_path("tuner", "bad.txt");
    {
        std::ofstream out(path);
        out << "# comment\nhost=hostA transport=shm alpha_us=1 bw_GBps=2\n"
            << "host=hostA transport=tcp alpha_us=fast bw_GBps=2\n";
    }
    auto r = tuner::load(path, "hostA", "tcp");
    assert_false(r.is_ok());
    assert_int_equal(r.error().code(), LOOM_ERR_PARSE);
    const std::string& msg = r.error().message();
    if (msg.find("line 3") == std::string::npos || msg.find("alpha_us") == std::string::npos) {
        fail_msg("the message names neither the line nor the field: %s", msg.c_str());
    }
    assert_false(tuner::from_line("host=a transport=shm alpha_us=1").is_ok());  // no bw
    assert_false(tuner::from_line("host=a transport=shm alpha_us=-1 bw_GBps=1").is_ok());
    assert_false(tuner::from_line("host=a transport shm").is_ok());
    std::remove(path.c_str());
}

// Applicable first, ascending; the excluded follow with the constraint that excluded them.
static void ranking_sorts_and_excludes_with_reasons(void**) {
    auto c = test::make_call(collective::allreduce, 6, 1 << 20);
    tuner::in_network_state inc;  // no switch
    tuner::ranking r =
        tuner::rank_algorithms(c, params(2, 4), algorithms::port_model::per_edge, inc);
    assert_non_null(r.best);
    bool seen_excluded = false;
    double last        = 0;
    for (const auto& k : r.candidates) {
        if (!k.applicable) {
            seen_excluded = true;
            assert_true(k.time_s < 0);
            assert_false(k.reason.empty());
            continue;
        }
        assert_false(seen_excluded);  // no applicable one after an excluded one
        assert_true(k.time_s >= last);
        last = k.time_s;
    }
    assert_ptr_equal(r.best, r.candidates.front().algo);
    const tuner::candidate* dims = find(r, "dims");
    assert_non_null(dims);
    assert_false(dims->applicable);
    test::expect_has(dims->reason, "needs a torus");
    assert_true(find(r, "rabenseifner")->applicable);  // any N (folded)
    const tuner::candidate* in_net = find(r, "inc");
    assert_non_null(in_net);
    assert_false(in_net->applicable);
    assert_string_equal(in_net->reason.c_str(), inc.why_not.c_str());
    // Every algorithm of the primitive is listed exactly once.
    assert_int_equal(r.candidates.size(),
                     std::ranges::count_if(algorithms::catalogue(), [](const auto* a) {
                         return a->primitive == collective::allreduce;
                     }));
}

// The predicted time is the closed form with the calibrated α and BW.
static void ranking_equals_closed_forms(void**) {
    const double alpha = 3e-6, bw = 5e9;
    for (int n : {2, 3, 8, 13}) {
        for (int64_t count : {int64_t{2}, int64_t{1} << 18}) {
            auto c = test::make_call(collective::allreduce, n, count);
            tuner::ranking r =
                tuner::rank_algorithms(c, params(3, 5), algorithms::port_model::per_edge, {});
            double m                     = double(count) * 4;
            const tuner::candidate* ring = find(r, "ring");
            double want                  = 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * m / bw;
            assert_true(std::fabs(ring->time_s - want) <= 1e-9 * want);
        }
    }
}

// Latency-bound sizes pick fewer rounds, bandwidth-bound sizes fewer bytes; with a usable
// aggregation node at scale the in-network algorithm wins.
static void ranking_crossovers(void**) {
    auto small = test::make_call(collective::allreduce, 16, 2);
    auto large = test::make_call(collective::allreduce, 16, int64_t{1} << 26);
    auto p     = params(2, 4);
    auto rs    = tuner::rank_algorithms(small, p, algorithms::port_model::per_edge, {});
    auto rl    = tuner::rank_algorithms(large, p, algorithms::port_model::per_edge, {});
    assert_true(rs.best->name != "ring");  // 30 α is not the way to move 8 bytes
    auto ring_small =
        algorithms::predict(*find(rs, "ring")->algo, small, 8, algorithms::port_model::per_edge);
    auto best_small = algorithms::predict(*rs.best, small, 8, algorithms::port_model::per_edge);
    assert_true(best_small.n_alpha < ring_small.n_alpha);
    auto best_large = algorithms::predict(*rl.best, large, double(int64_t{1} << 28),
                                          algorithms::port_model::per_edge);
    assert_true(best_large.n_beta <= 2.0 * 15 / 16 + 1e-9);  // bandwidth-optimal
    tuner::in_network_state inc;
    inc.usable = true;
    auto ri    = tuner::rank_algorithms(test::make_call(collective::allreduce, 64, 2), p,
                                        algorithms::port_model::per_edge, inc);
    assert_string_equal(std::string(ri.best->name).c_str(), "inc");
}

// bidir-ring's gain needs a rank to drive both ring links at once: on a switch (one port per
// rank, one host's memory) it is costed single-port, so the flat ring, listed first, keeps
// large all-reduce, reduce-scatter and all-gather; on a ring of physical links it wins.
static void bidir_ring_costed_single_port_on_a_switch(void**) {
    auto p = params(2, 4);
    for (auto coll : {collective::allreduce, collective::reduce_scatter, collective::allgather}) {
        auto star = test::make_call(coll, 4, int64_t{1} << 22);
        auto rs   = tuner::rank_algorithms(star, p, algorithms::port_model::per_edge, {});
        const tuner::candidate* bidir = find(rs, "bidir-ring");
        const tuner::candidate* ring  = find(rs, "ring");
        assert_true(bidir != nullptr && ring != nullptr && bidir->applicable);
        assert_true(std::fabs(bidir->time_s - ring->time_s) <= 1e-9 * ring->time_s);
        assert_true(rs.best->name != "bidir-ring");
        auto on_ring = test::make_call(coll, *topology::shape::parse("ring:4"), int64_t{1} << 22);
        auto rr      = tuner::rank_algorithms(on_ring, p, algorithms::port_model::per_edge, {});
        assert_true(find(rr, "bidir-ring")->time_s < find(rr, "ring")->time_s);
    }
}

// With the reduction counted, two ranks' large all-reduce goes to the reduce-scatter based
// algorithms (each rank combines M/2) rather than recursive doubling (M), which the α-β
// forms alone rank first by one α.
static void ranking_counts_the_reduction(void**) {
    auto c               = test::make_call(collective::allreduce, 2, int64_t{1} << 22);
    auto p               = params(2, 4);
    auto plain           = tuner::rank_algorithms(c, p, algorithms::port_model::per_edge, {});
    p.reduce_bytes_per_s = 8e9;
    auto gamma           = tuner::rank_algorithms(c, p, algorithms::port_model::per_edge, {});
    assert_string_equal(std::string(plain.best->name).c_str(), "recursive-doubling");
    assert_true(gamma.best->name != "recursive-doubling");
    const double m = double(int64_t{1} << 24);
    assert_true(
        std::fabs(tuner::local_bytes(*find(gamma, "recursive-doubling")->algo, c).reduced - m) < 1);
    assert_true(std::fabs(tuner::local_bytes(*find(gamma, "ring")->algo, c).reduced - m / 2) < 1);
    auto ring_work = tuner::local_bytes(*find(gamma, "ring")->algo, c);
    double want    = find(plain, "ring")->time_s + (ring_work.reduced + ring_work.copied) / 8e9;
    assert_true(std::fabs(find(gamma, "ring")->time_s - want) <= 1e-9 * want);
    auto bc = test::make_call(collective::broadcast, 4, 1000);  // nothing reduced
    assert_true(
        tuner::local_bytes(test::find_algorithm(collective::broadcast, "binomial"), bc).reduced ==
        0);
    // Bruck rotates the whole all-to-all buffer; pairwise copies only its own block.
    auto a2a      = test::make_call(collective::alltoall, 2, int64_t{1} << 20);
    auto bruck    = tuner::local_bytes(test::find_algorithm(collective::alltoall, "bruck"), a2a);
    auto pairwise = tuner::local_bytes(test::find_algorithm(collective::alltoall, "pairwise"), a2a);
    assert_true(bruck.copied > pairwise.copied);
    auto ra2a = tuner::rank_algorithms(a2a, p, algorithms::port_model::per_edge, {});
    assert_true(ra2a.best->name != "bruck");
}

static void size_buckets_and_representatives(void**) {
    assert_int_equal(tuner::size_bucket(0), 0);
    assert_int_equal(tuner::size_bucket(1), 1);
    assert_int_equal(tuner::size_bucket(1023), 10);
    assert_int_equal(tuner::size_bucket(1024), 11);
    assert_int_equal(tuner::size_bucket(2047), 11);
    double mid = tuner::bucket_middle(11);
    assert_true(mid > 1024 && mid < 2048);
    auto c = test::make_call(collective::allreduce, 4, 300);  // 1200 B, bucket 11
    auto r = tuner::representative(c, 1200);
    assert_int_equal(r.count, std::llround(300 * mid / 1200));
    // Two calls of one bucket share one decision, whichever came first.
    tuner::decision_cache cache;
    auto a = test::make_call(collective::allreduce, 4, 260);
    auto b = test::make_call(collective::allreduce, 4, 500);
    auto d = test::make_call(collective::allreduce, 4, 130);  // 520 B: another bucket
    const algorithms::algorithm* ring = &test::find_algorithm(collective::allreduce, "ring");
    cache.put(a, false, 1040, ring);
    assert_ptr_equal(cache.find(b, false, 2000), ring);
    assert_null(cache.find(d, false, 520));
    assert_null(cache.find(b, true, 2000));  // with a usable switch: decided separately
    auto e       = b;
    e.dtype_size = 8;
    assert_null(cache.find(e, false, 2000));
    cache.clear();
    assert_null(cache.find(b, false, 2000));
}

// admits: the one applicability test behind the ranking and an explicit name. An
// in-network algorithm states its need of a node (algorithm::in_network), not its name.
static void admits_states_the_in_network_constraint(void**) {
    auto c = test::make_call(collective::allreduce, 4, 1000);
    tuner::in_network_state none;
    none.why_not = "no node here";
    tuner::in_network_state usable;
    usable.usable      = true;
    usable.flat_usable = true;
    int in_network = 0, node_local = 0;
    for (const algorithms::algorithm* a : algorithms::catalogue()) {
        if (a->primitive != collective::allreduce) {
            continue;
        }
        const bool fits = algorithms::check_call(*a, c).is_ok();
        status without  = tuner::admits(*a, c, none);
        status with     = tuner::admits(*a, c, usable);
        assert_int_equal(with.is_ok(), fits);  // a usable node adds no constraint
        if (a->in_network) {
            ++in_network;
            assert_false(without.is_ok());
            assert_int_equal(without.code(), LOOM_ERR_NOT_APPLICABLE);
            assert_string_equal(without.message().c_str(), "no node here");
        } else if (a->node_local) {
            ++node_local;
            assert_int_equal(without.code(), LOOM_ERR_NOT_APPLICABLE);
        } else {
            assert_int_equal(without.is_ok(), fits);
        }
    }
    assert_int_equal(in_network, 1);  // inc
    assert_int_equal(node_local, 1);  // flat
    for (collective k : {collective::allreduce, collective::reduce, collective::broadcast}) {
        assert_true(algorithms::find(k, "inc")->in_network);
    }
}

static void explanation_text_names_everything(void**) {
    auto c = test::make_call(collective::allreduce, 6, 1000);
    tuner::ranking r =
        tuner::rank_algorithms(c, params(2, 4), algorithms::port_model::per_edge, {});
    std::string text =
        tuner::explain_text(c, r, r.best, "tuner", params(2, 4), algorithms::port_model::per_edge);
    for (const char* want : {"allreduce of 3.9 KiB on 6 ranks", "alpha 2 us", "BW 4 GB/s",
                             "excluded", "needs a torus", "choice: ", "->"}) {
        test::expect_has(text, want);
    }
}

LOOM_TEST_MAIN("tuner", cmocka_unit_test(calibration_line_round_trips),
               cmocka_unit_test(calibration_cost_classes),
               cmocka_unit_test(calibration_save_keeps_other_lines),
               cmocka_unit_test(calibration_lines_per_rank_count),
               cmocka_unit_test(calibration_malformed_line_is_named),
               cmocka_unit_test(calibration_records_how_it_measured),
               cmocka_unit_test(calibration_plausibility_table),
               cmocka_unit_test(calibration_staleness_and_load),
               cmocka_unit_test(calibration_unwritable_file_is_named),
               cmocka_unit_test(ranking_sorts_and_excludes_with_reasons),
               cmocka_unit_test(admits_states_the_in_network_constraint),
               cmocka_unit_test(ranking_equals_closed_forms), cmocka_unit_test(ranking_crossovers),
               cmocka_unit_test(ranking_counts_the_reduction),
               cmocka_unit_test(bidir_ring_costed_single_port_on_a_switch),
               cmocka_unit_test(size_buckets_and_representatives),
               cmocka_unit_test(explanation_text_names_everything))
