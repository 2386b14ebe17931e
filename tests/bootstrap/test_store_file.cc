// SPDX-License-Identifier: Apache-2.0
// The file store between real processes: 8 ranks exchange keys in one directory; duplicate
// rank and wrong size are refused; a timeout names the key and the ranks never registered;
// rank 0 removes the job's files once the others are done. And the rule that makes
// `mpirun -n 4 ./app` work with no loom variables: ranks started by one launcher (Open MPI or
// MPICH variables only) meet in a job directory under $TMPDIR.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "bootstrap/bootstrap.hh"
#include "proc.hh"
#include "test_main.hh"

using namespace loom;

namespace {

constexpr double deadline_s = 30;
std::string probe_path;

std::string fresh_dir() {
    char tmpl[] = "/tmp/loom-file-store-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        abort();
    }
    return tmpl;
}

bootstrap::identity rank_of(int rank, int size, const char* job = "file-test") {
    bootstrap::identity me;
    me.rank = rank;
    me.size = size;
    me.job  = job;
    return me;
}

// A forked rank that connects to the store at `address` as `me`, publishes addr/1 and is
// SIGKILLed (a launch killed during start-up); its exit code.
int killed_after_publishing(const std::string& address, const bootstrap::identity& me) {
    auto killed = test::run_ranks(
        1,
        [&](int, std::string*) {
            auto store = bootstrap::connect_store(address, me, 1);
            if (!store || !(*store)->set("addr/1", "old")) {
                return 1;
            }
            raise(SIGKILL);
            return 0;
        },
        deadline_s);
    return killed[0].code;
}

}  // namespace

static void eight_ranks_exchange_keys_and_rank_0_tidies_up(void**) {
    std::string dir = fresh_dir() + "/store";  // created by the store
    auto out        = test::run_ranks(
               8,
               [&](int rank, std::string* report) {
            auto store = bootstrap::connect_store("file:" + dir, rank_of(rank, 8), 20);
            if (!store) {
                *report = store.error().to_string();
                return 1;
            }
            kv_store& s = **store;
            if (rank == 5) {
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
            if (!s.set("addr/" + std::to_string(rank), "value-" + std::to_string(rank))) {
                return 2;
            }
            std::vector<std::string> keys;
            for (int r = 0; r < 8; ++r) {
                keys.push_back("addr/" + std::to_string(r));
            }
            if (status st = s.wait(keys, 20); !st) {
                *report = st.to_string();
                return 3;
            }
            for (int r = 0; r < 8; ++r) {
                auto v = s.get("addr/" + std::to_string(r), 1);
                if (!v || *v != "value-" + std::to_string(r)) {
                    return 4;
                }
            }
            status again = s.set("addr/" + std::to_string(rank), "x");
            return again.code() == LOOM_ERR_INVALID_ARGUMENT ? 0 : 5;
        },
               deadline_s);
    expect_all_ok(out);
    // Rank 0 waited for the others' done markers, then removed the job's files and the dir.
    assert_false(std::filesystem::exists(dir));
    std::filesystem::remove(std::filesystem::path(dir).parent_path());
}

static void duplicate_rank_and_wrong_size_are_refused(void**) {
    std::string dir = fresh_dir();
    auto first      = bootstrap::connect_store("file:" + dir, rank_of(1, 3), 1);
    assert_true(first.is_ok());
    auto twice = bootstrap::connect_store("file:" + dir, rank_of(1, 3), 1);
    assert_int_equal(twice.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(twice.error().message().c_str(), "rank 1 registered twice"));
    auto sized = bootstrap::connect_store("file:" + dir, rank_of(2, 4), 1);
    assert_int_equal(sized.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(
        std::strstr(sized.error().message().c_str(), "says the job has 4 ranks but rank 1"));
    // Another job in the same directory is not affected.
    auto other = bootstrap::connect_store("file:" + dir, rank_of(1, 4, "other"), 1);
    assert_true(other.is_ok());
    first->reset();
    other->reset();
    std::filesystem::remove_all(dir);
}

static void a_timeout_names_the_key_and_the_ranks_never_registered(void**) {
    std::string dir = fresh_dir();
    auto store      = bootstrap::connect_store("file:" + dir, rank_of(1, 4), 1);
    assert_true(store.is_ok());
    auto t0     = std::chrono::steady_clock::now();
    auto v      = (*store)->get("addr/3", 0.3);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    assert_int_equal(v.error().code(), LOOM_ERR_TIMEOUT);
    assert_true(took >= 0.29 && took < 1.5);
    const char* msg = v.error().message().c_str();
    assert_non_null(std::strstr(msg, "'addr/3'"));
    assert_non_null(std::strstr(msg, "never registered: 0,2,3"));
    assert_non_null(std::strstr(msg, dir.c_str()));
    store->reset();
    std::filesystem::remove_all(dir);
}

static void a_directory_others_can_write_is_refused(void**) {
    std::string dir = fresh_dir();
    // Another user's plant: a world-writable directory with rank 0's address key in it.
    assert_int_equal(chmod(dir.c_str(), 0777), 0);
    FILE* plant = std::fopen((dir + "/file-test.key.addr%2F0").c_str(), "w");
    std::fputs("6.6.6.6:1", plant);
    std::fclose(plant);
    auto store = bootstrap::connect_store("file:" + dir, rank_of(1, 2), 1);
    assert_false(store.is_ok());
    assert_int_equal(store.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    const char* msg = store.error().message().c_str();
    assert_non_null(std::strstr(msg, "refuses the file store"));
    assert_non_null(std::strstr(msg, "mode 0777"));
    assert_non_null(std::strstr(msg, "mode 0700"));
    if (geteuid() == 0) {  // owned by someone else, even with a private mode
        assert_int_equal(chmod(dir.c_str(), 0700), 0);
        assert_int_equal(chown(dir.c_str(), 65534, 65534), 0);
        auto theirs = bootstrap::connect_store("file:" + dir, rank_of(1, 2), 1);
        assert_false(theirs.is_ok());
        assert_non_null(std::strstr(theirs.error().message().c_str(), "owned by uid 65534"));
    }
    // A planted file without a store's stamp is never taken for a value, even in a good dir.
    assert_int_equal(chown(dir.c_str(), geteuid(), getegid()), 0);
    assert_int_equal(chmod(dir.c_str(), 0700), 0);
    auto ok = bootstrap::connect_store("file:" + dir, rank_of(1, 2), 1);
    assert_true(ok.is_ok());
    auto planted = (*ok)->get("addr/0", 0.2);
    assert_false(planted.is_ok());
    assert_non_null(std::strstr(planted.error().message().c_str(), "another launch"));
    ok->reset();
    std::filesystem::remove_all(dir);
}

static void a_job_killed_during_start_up_does_not_block_its_id(void**) {
    std::string dir = fresh_dir();
    // The first launch's rank 1 registers, publishes its address and is SIGKILLed.
    assert_int_equal(killed_after_publishing("file:" + dir, rank_of(1, 2)), 128 + SIGKILL);
    // The next launch with the same job id: its rank 1 registers, and the stale address is
    // neither read nor in the way.
    auto rank0 = bootstrap::connect_store("file:" + dir, rank_of(0, 2), 1);
    assert_true(rank0.is_ok());
    auto stale = (*rank0)->get("addr/1", 0.1);
    assert_int_equal(stale.error().code(), LOOM_ERR_TIMEOUT);
    auto rank1 = bootstrap::connect_store("file:" + dir, rank_of(1, 2), 1);
    assert_true(rank1.is_ok());
    assert_true((*rank1)->set("addr/1", "new").is_ok());
    assert_string_equal((*rank0)->get("addr/1", 1)->c_str(), "new");
    rank1->reset();
    rank0->reset();
    std::filesystem::remove_all(dir);
}

static void a_killed_launchs_default_directory_is_removed_by_the_next(void**) {
    std::string tmp  = fresh_dir();
    std::string dead = tmp + "/loom-bootstrap-" + std::to_string(geteuid()) + "-deadjob";
    assert_int_equal(killed_after_publishing("file:" + dead, rank_of(1, 2, "deadjob")),
                     128 + SIGKILL);
    assert_true(std::filesystem::is_directory(dead));
    std::string live = tmp + "/loom-bootstrap-" + std::to_string(geteuid()) + "-livejob";
    auto rank0       = bootstrap::connect_store("file:" + live, rank_of(0, 2, "livejob"), 1);
    assert_true(rank0.is_ok());
    assert_false(std::filesystem::exists(dead));
    rank0->reset();
    std::filesystem::remove_all(tmp);
}

static void two_launches_sharing_a_job_id_refuse_each_other(void**) {
    std::string dir = fresh_dir();
    auto a0         = rank_of(0, 2, "shared");
    a0.secret       = std::string(64, 'a');
    auto b1         = rank_of(1, 2, "shared");
    b1.secret       = std::string(64, 'b');
    auto first      = bootstrap::connect_store("file:" + dir, a0, 1);
    assert_true(first.is_ok());
    auto second = bootstrap::connect_store("file:" + dir, b1, 1);
    assert_false(second.is_ok());
    assert_int_equal(second.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(second.error().message().c_str(),
                                "another launch of job 'shared' (a different LOOM_JOB_SECRET)"));
    // The same launch's rank 1 (same secret) joins as usual.
    auto a1   = rank_of(1, 2, "shared");
    a1.secret = a0.secret;
    auto mine = bootstrap::connect_store("file:" + dir, a1, 1);
    assert_true(mine.is_ok());
    mine->reset();
    first->reset();
    std::filesystem::remove_all(dir);
}

// Ranks started by one launcher with only its own variables: no LOOM_* at all.
static void launcher_ranks_without_loom_variables_meet_in_tmpdir(void**) {
    std::string tmp = fresh_dir();
    for (const char* flavour : {"openmpi", "mpich"}) {
        std::vector<test::program> ranks(4);
        for (int k = 0; k < 4; ++k) {
            auto& p = ranks[static_cast<size_t>(k)];
            p.argv  = {probe_path, "store"};
            p.env   = {"TMPDIR=" + tmp, "LOOM_BOOTSTRAP_TIMEOUT=20"};
            if (std::string(flavour) == "openmpi") {
                p.env.insert(p.env.end(), {"OMPI_COMM_WORLD_RANK=" + std::to_string(k),
                                           "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
                                           "OMPI_MCA_ess_base_jobid=" + std::to_string(getpid())});
            } else {  // Hydra exports no job id: the shared parent (this test) names the job
                p.env.insert(p.env.end(),
                             {"PMI_RANK=" + std::to_string(k), "PMI_SIZE=4", "MPI_LOCALNRANKS=4"});
            }
        }
        auto out = test::run_programs(ranks, deadline_s);
        expect_all_ok(out);
        for (int k = 0; k < 4; ++k) {
            std::string want = "store ok rank " + std::to_string(k) + " of 4 source " + flavour;
            assert_non_null(std::strstr(out[static_cast<size_t>(k)].text.c_str(), want.c_str()));
            assert_non_null(std::strstr(out[static_cast<size_t>(k)].text.c_str(),
                                        ("via file:" + tmp + "/loom-bootstrap-").c_str()));
        }
    }
    // Each job's rank 0 removed its directory once the others were done.
    assert_true(std::filesystem::is_empty(tmp));
    std::filesystem::remove_all(tmp);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s LOOMRUN_PROBE\n", argv[0]);
        return 2;
    }
    probe_path                      = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_ranks_exchange_keys_and_rank_0_tidies_up),
        cmocka_unit_test(duplicate_rank_and_wrong_size_are_refused),
        cmocka_unit_test(a_timeout_names_the_key_and_the_ranks_never_registered),
        cmocka_unit_test(launcher_ranks_without_loom_variables_meet_in_tmpdir),
        cmocka_unit_test(a_directory_others_can_write_is_refused),
        cmocka_unit_test(a_job_killed_during_start_up_does_not_block_its_id),
        cmocka_unit_test(two_launches_sharing_a_job_id_refuse_each_other),
        cmocka_unit_test(a_killed_launchs_default_directory_is_removed_by_the_next),
    };
    return LOOM_RUN_TESTS("bootstrap_store_file", tests);
}
