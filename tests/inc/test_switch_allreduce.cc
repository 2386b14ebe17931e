// SPDX-License-Identifier: Apache-2.0
// loom-switch as a process, over real tcp and shm links: four ranks (threads, each with its
// own link and inc::client) all-reduce through it exactly (int32 sums; float32 sums in
// deterministic mode, bitwise the rank-order sum), also with loss and duplication injected
// inside the switch; communicators of one job and of another job sharing the switch get
// their own results; a join beyond the job's quota is refused with NO_RESOURCE; SIGTERM
// prints the statistics and exits 0, and `loom-switch --stats` prints them too.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "drivers/datagram.hh"
#include "kernels/reduce.hh"
#include "switch_harness.hh"
#include "test_case.hh"

using namespace loom;
using namespace loom::inc;
using namespace loom::inc::test;

namespace {

constexpr uint32_t ranks = 4;
constexpr size_t count   = 5000;  // 5 chunks of 1024: more chunks than the 4-slot window

float float_input(uint32_t r, size_t i) {
    // Rank 0's big values make the float sum's order visible.
    return r == 0 ? 1e8f : 3.0f + float(i % 13) * 1e-3f * float(r + 1);
}

// All-reduces int32 and float32 (deterministic) among `ranks` threads; checks both. Returns
// what went wrong, empty if nothing (cmocka's asserts belong to the main thread).
std::string allreduce_through(const std::string& address, uint64_t job, uint64_t comm, int base) {
    std::vector<std::vector<int32_t>> in(ranks, std::vector<int32_t>(count)),
        out(ranks, std::vector<int32_t>(count));
    std::vector<std::vector<float>> fin(ranks, std::vector<float>(count)),
        fout(ranks, std::vector<float>(count));
    for (uint32_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < count; ++i) {
            in[r][i]  = int32_t(base + r * 1000 + i);
            fin[r][i] = float_input(r, i);
        }
    }
    std::vector<status> res  = run_ranks(ranks, [&](uint32_t r) {
        step a{1, LOOM_INT32, {}, in[r].data(), out[r].data(), count};
        step b{2, LOOM_FLOAT32, {}, fin[r].data(), fout[r].data(), count};
        return run_rank(address, job, comm, r, flat_join(ranks, 4, join_deterministic), {a, b});
    });
    std::vector<float> fwant = fin[0];
    auto add                 = kernels::reduce_kernel(LOOM_FLOAT32, LOOM_SUM);
    for (uint32_t r = 1; r < ranks; ++r) {
        add(fwant.data(), fwant.data(), fin[r].data(), count);
    }
    for (uint32_t r = 0; r < ranks; ++r) {
        std::string who = "job " + std::to_string(job) + " comm " + std::to_string(comm) +
                          " rank " + std::to_string(r) + ": ";
        if (!res[r]) {
            return who + res[r].to_string();
        }
        for (size_t i = 0; i < count; ++i) {
            if (out[r][i] != int32_t(4 * base + 6000 + 4 * i)) {
                return who + "int32 element " + std::to_string(i) + " is " +
                       std::to_string(out[r][i]);
            }
        }
        if (std::memcmp(fout[r].data(), fwant.data(), count * sizeof(float)) != 0) {
            return who + "the float32 sum is not the rank-order sum";
        }
    }
    return {};
}

void check(const std::string& error) {
    if (!error.empty()) {
        LOOM_FAIL(error);
    }
}

void run_allreduce(bool shm, bool lossy) {
    std::vector<std::string> args = {"--listen", fresh_address(shm)};
    if (lossy) {
        args.insert(args.end(), {"--drop", "0.05", "--dup", "0.05", "--seed", "7"});
    }
    switch_proc s = start_switch(args);
    check(allreduce_through(s.address, 1, 1, 0));
    std::string out = stop_cleanly(s);
    assert_true(stat_value(out, "results") >= 10);  // 5 chunks × 2 collectives
    assert_int_equal(stat_value(out, "contributions"), 40);
    if (lossy) {
        assert_true(stat_value(out, "drops_injected") > 0);
        assert_true(stat_value(out, "retransmissions") > 0);
    }
}

void communicators_apart_and_job_quota(void**) {
    switch_proc s = start_switch({"--listen", fresh_address(false), "--job-quota", "8"});
    // Job 1 comms 1 and 2 and job 2 comm 1 at once, each with its own inputs.
    std::string ea, eb, ec;
    std::thread a([&] { ea = allreduce_through(s.address, 1, 1, 0); });
    std::thread b([&] { eb = allreduce_through(s.address, 1, 2, 100000); });
    std::thread c([&] { ec = allreduce_through(s.address, 2, 1, -50000); });
    a.join();
    b.join();
    c.join();
    check(ea);
    check(eb);
    check(ec);
    // Job 1 holds 4 + 4 slots: its quota. A third communicator is refused.
    auto l1 = drivers::connect_datagram(s.address, 5), l2 = drivers::connect_datagram(s.address, 5),
         l3 = drivers::connect_datagram(s.address, 5);
    assert_true(l1 && l2 && l3);
    assert_true(join_node(**l1, 1, 1, 0, flat_join(2, 4), 5).is_ok());
    assert_true(join_node(**l2, 1, 2, 0, flat_join(2, 4), 5).is_ok());
    auto over = join_node(**l3, 1, 3, 0, flat_join(2, 4), 5);
    assert_false(over.is_ok());
    assert_int_equal(over.error().code(), LOOM_ERR_NO_RESOURCE);
    // Another job is not held back by job 1's quota; a disagreeing join is refused.
    auto l5 =
        drivers::connect_datagram(s.address, 5);  // one challenge per link: a new link per join
    assert_true(l5 && join_node(**l5, 2, 3, 0, flat_join(2, 4), 5).is_ok());
    auto l4   = drivers::connect_datagram(s.address, 5);
    auto disa = join_node(**l4, 2, 3, 1, flat_join(3, 4), 5);
    assert_int_equal(disa.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    std::string text = wait_for_stat(s.address, "groups", 3);
    assert_int_equal(stat_value(text, "groups"), 3);
    assert_int_equal(stat_value(text, "nacks"), 2);
    stop_cleanly(s);
}

// `loom-switch --stats ADDR` as a process: prints the counters, exits 0; a dead address
// exits 1.
void stats_command(void**) {
    switch_proc s   = start_switch({"--listen", fresh_address(true)});
    std::string dir = scratch_dir();
    std::string cmd =
        std::string(std::getenv("LOOM_SWITCH")) + " --stats " + s.address + " > " + dir + "/stats";
    assert_int_equal(std::system(cmd.c_str()), 0);
    std::ifstream printed(dir + "/stats");
    std::string first;
    printed >> first;
    std::filesystem::remove_all(dir);
    assert_string_equal(first.c_str(), "links");
    std::string text = wait_for_stat(s.address, "stats_queries", 2);
    assert_true(stat_value(text, "links_accepted") >= 2);
    assert_true(stat_value(text, "malformed_bad_magic") == 0);
    std::string bad =
        std::string(std::getenv("LOOM_SWITCH")) + " --stats tcp:127.0.0.1:1 > /dev/null 2>&1";
    int st = std::system(bad.c_str());
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    std::string out = stop_cleanly(s);
    assert_true(out.find("loom-switch listening on shm:") != std::string::npos);
    assert_true(stat_value(out, "stats_queries") >= 2);
}

}  // namespace

LOOM_SWITCH_TEST_MAIN("inc_switch_allreduce", LOOM_CASE(allreduce_tcp, run_allreduce(false, false)),
                      LOOM_CASE(allreduce_shm, run_allreduce(true, false)),
                      LOOM_CASE(allreduce_tcp_lossy, run_allreduce(false, true)),
                      LOOM_CASE(allreduce_shm_lossy, run_allreduce(true, true)),
                      cmocka_unit_test(communicators_apart_and_job_quota),
                      cmocka_unit_test(stats_command))
