// SPDX-License-Identifier: Apache-2.0
// Jobs at an aggregation node are told apart by 64-bit ids of their whole names
// (inc/node/ticket.hh): two jobs whose names share a prefix, such as exp.sweep and
// exp.stuff, each get a quota of their own at one node, and the ids of many names that
// share prefixes do not collide. The communicators are real (the C API, one rank each over
// an in-process node); the node is inspected once its serving thread stopped.
#include <loom/loom.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <unordered_set>

#include "inc/node/switch_node.hh"
#include "inc/node/ticket.hh"
#include "test_main.hh"

using namespace loom;

namespace {

void ids_of_names_sharing_a_prefix_differ(void**) {
    assert_true(inc::job_id_of("exp.sweep") != inc::job_id_of("exp.stuff"));
    assert_true(inc::job_id_of("exp.sweep") != inc::job_id_of("exp"));
    assert_true(inc::job_id_of("exp.s0c1") != inc::job_id_of("exp.s0c2"));
    // Ids use all 64 bits.
    assert_true((inc::job_id_of("exp.sweep") >> 32) != 0);
    // Launcher-style names that share long prefixes: no two ids alike, none 0 (the node's).
    std::unordered_set<uint64_t> seen;
    size_t names = 0;
    for (int job = 0; job < 1000; ++job) {
        for (const std::string& suffix :
             {std::string(), std::string(".sweep"), std::string(".stuff"), std::string(".s0c0"),
              std::string(".s1c3")}) {
            std::string name = "exp-" + std::to_string(job) + suffix;
            uint64_t id      = inc::job_id_of(name);
            assert_true(id != 0);
            seen.insert(id);
            ++names;
        }
    }
    for (int i = 0; i < 100000; ++i) {
        seen.insert(inc::job_id_of("loomrun-12345.s" + std::to_string(i) + "c0"));
        ++names;
    }
    assert_int_equal(seen.size(), names);
}

// The value of counter `name` in the node's statistics.
uint64_t stat(const std::string& text, const std::string& name) {
    size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos && text.starts_with(name + " ")) {
        at = 0;
    } else if (at != std::string::npos) {
        ++at;
    }
    if (at == std::string::npos) {
        LOOM_FAIL("no statistic " + name + " in:\n" + text);
    }
    return std::strtoull(text.c_str() + at + name.size() + 1, nullptr, 10);
}

loom_comm_t create_alone(const char* job) {
    loom_config_t cfg;
    assert_int_equal(loom_config_init(&cfg), LOOM_SUCCESS);
    cfg.rank         = 0;
    cfg.size         = 1;
    cfg.job          = job;
    loom_comm_t comm = nullptr;
    loom_status_t st = loom_comm_create(&cfg, &comm);
    if (st != LOOM_SUCCESS) {
        loom_error_info_t info{};
        info.struct_size = sizeof info;
        loom_last_error(&info);
        LOOM_FAIL(std::string("loom_comm_create for job ") + job + ": " + info.message);
    }
    return comm;
}

// Each job asks for the whole of a job's quota: both fit only if the node counts them
// apart (a name cut at ".s" made both "exp", and the second was refused).
void jobs_sharing_a_prefix_have_quotas_of_their_own(void**) {
    inc::switch_config cfg;
    cfg.listen    = "tcp:127.0.0.1:0";
    cfg.insecure  = true;
    cfg.slots     = 8;
    cfg.job_quota = 4;
    auto node     = inc::switch_node::open(cfg);
    assert_true(node.is_ok());
    std::atomic<bool> stop{false};
    std::thread serve([&] {
        while (!stop.load()) {
            if (!(*node)->poll()) {
                std::this_thread::yield();
            }
        }
    });
    // Read on the registry's first use, which creating the first communicator is.
    setenv("LOOM_SWITCH", (*node)->address().c_str(), 1);
    setenv("LOOM_INC_SLOTS", "4", 1);
    loom_comm_t sweep = create_alone("exp.sweep");
    loom_comm_t stuff = create_alone("exp.stuff");
    stop              = true;
    serve.join();
    std::string text = (*node)->stats_text();
    if (stat(text, "groups") != 2 || stat(text, "slots_in_use") != 8 || stat(text, "nacks") != 0) {
        LOOM_FAIL("expected both jobs admitted with 4 slots each:\n" + text);
    }
    assert_int_equal(loom_comm_destroy(sweep), LOOM_SUCCESS);
    assert_int_equal(loom_comm_destroy(stuff), LOOM_SUCCESS);
}

}  // namespace

LOOM_TEST_MAIN("inc_job_ids", cmocka_unit_test(ids_of_names_sharing_a_prefix_differ),
               cmocka_unit_test(jobs_sharing_a_prefix_have_quotas_of_their_own))
