// SPDX-License-Identifier: Apache-2.0
// bootstrap::discover() under each launcher's variables (loomrun, Open MPI, MPICH/Hydra,
// Slurm, PMIx, none), and connect_store()'s address checks. Each case runs the probe program
// in a child with exactly the variables it names, so the registry reads a real environment.
#include <unistd.h>

#include <cstring>
#include <map>

#include "bootstrap/bootstrap.hh"
#include "proc.hh"
#include "test_main.hh"

using namespace loom;

namespace {

std::string probe_path;

struct probe_result {
    bool ok = false;
    std::map<std::string, std::string> fields;  // rank, size, source, job, bootstrap, timeout
    int code = 0;                               // error: the loom_status_t
    std::string message;                        // error: the message
    std::string raw;
};

probe_result probe(const std::vector<std::string>& env) {
    test::program p;
    p.argv = {probe_path};
    p.env  = env;
    auto o = test::run_program(p, 20);
    probe_result r;
    r.raw = o.text + o.err;
    if (o.code != 0) {
        LOOM_FAIL("probe exited with " + std::to_string(o.code) + ": " + r.raw);
    }
    if (o.text.rfind("error ", 0) == 0) {
        r.code    = std::atoi(o.text.c_str() + std::strlen("error code="));
        auto at   = o.text.find("message=");
        r.message = o.text.substr(at + 8);
        return r;
    }
    r.ok             = o.text.rfind("ok ", 0) == 0;
    std::string line = o.text.substr(0, o.text.find('\n'));
    size_t pos       = 3;
    while (pos < line.size()) {
        size_t space = line.find(' ', pos);
        std::string tok =
            line.substr(pos, space == std::string::npos ? std::string::npos : space - pos);
        auto eq                     = tok.find('=');
        r.fields[tok.substr(0, eq)] = tok.substr(eq + 1);
        pos                         = space == std::string::npos ? line.size() : space + 1;
    }
    return r;
}

void expect_ok(const probe_result& r, int rank, int size, const char* source) {
    if (!r.ok) {
        LOOM_FAIL("expected an identity, got: " + r.raw);
    }
    assert_int_equal(std::stoi(r.fields.at("rank")), rank);
    assert_int_equal(std::stoi(r.fields.at("size")), size);
    assert_string_equal(r.fields.at("source").c_str(), source);
}

void expect_error(const probe_result& r, const char* needle) {
    if (r.ok || r.code != LOOM_ERR_INVALID_ARGUMENT ||
        r.message.find(needle) == std::string::npos) {
        LOOM_FAIL(std::string("expected an invalid-argument error naming '") + needle +
                  "', got: " + r.raw);
    }
}

std::string uid() {
    return std::to_string(getuid());
}

}  // namespace

static void no_launcher_is_one_rank_without_rendezvous(void**) {
    auto r = probe({});
    expect_ok(r, 0, 1, "single");
    assert_string_equal(r.fields.at("bootstrap").c_str(), "");
    assert_string_equal(r.fields.at("timeout").c_str(), "30");
}

static void loomrun_variables_give_rank_size_job_and_rendezvous(void**) {
    auto r = probe({"LOOM_RANK=2", "LOOM_SIZE=4", "LOOM_JOB=j-1.x", "LOOM_BOOTSTRAP=127.0.0.1:5000",
                    "LOOM_BOOTSTRAP_TIMEOUT=2.5"});
    expect_ok(r, 2, 4, "loomrun");
    assert_string_equal(r.fields.at("job").c_str(), "j-1.x");
    assert_string_equal(r.fields.at("bootstrap").c_str(), "127.0.0.1:5000");
    assert_string_equal(r.fields.at("timeout").c_str(), "2.5");
    // LOOM_* wins over a launcher's variables (loomrun inside an allocation).
    r = probe({"LOOM_RANK=1", "LOOM_SIZE=2", "LOOM_JOB=j", "OMPI_COMM_WORLD_RANK=3",
               "OMPI_COMM_WORLD_SIZE=4"});
    expect_ok(r, 1, 2, "loomrun");
}

static void loomrun_variables_that_disagree_are_invalid(void**) {
    expect_error(probe({"LOOM_RANK=1"}), "LOOM_SIZE is not");
    expect_error(probe({"LOOM_SIZE=3"}), "LOOM_RANK is not");
    expect_error(probe({"LOOM_RANK=4", "LOOM_SIZE=4"}), "LOOM_RANK=4");
    expect_error(probe({"LOOM_RANK=-1", "LOOM_SIZE=4"}), "0 <= rank < size");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=0"}), "LOOM_SIZE=0");
    expect_error(probe({"LOOM_RANK=two", "LOOM_SIZE=4"}), "LOOM_RANK='two' is not an integer");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_JOB=a/b"}), "LOOM_JOB='a/b'");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_BOOTSTRAP=nohost"}), "LOOM_BOOTSTRAP");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_BOOTSTRAP=h:70000"}), "1..65535");
    expect_error(probe({"LOOM_BOOTSTRAP_TIMEOUT=0"}), "must be positive");
    expect_error(probe({"LOOM_BOOTSTRAP_TIMEOUT=soon"}), "LOOM_BOOTSTRAP_TIMEOUT='soon'");
}

static void limits_and_secrets_are_checked(void**) {
    // 2^32 + 2 ranks must not wrap to 2; INT_MAX must not reach an allocation.
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=4294967298", "LOOM_JOB=j"}),
                 "exceeds the limit of 65536 ranks");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2147483647", "LOOM_JOB=j"}),
                 "exceeds the limit of 65536 ranks");
    expect_error(probe({"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4294967298"}),
                 "exceeds the limit");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_JOB=j", "LOOM_JOB_SECRET=abc"}),
                 "LOOM_JOB_SECRET must be 64 hex digits");
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_JOB=j",
                        "LOOM_JOB_SECRET=" + std::string(64, 'g')}),
                 "not all hex digits");
    expect_error(probe({"LOOM_BOOTSTRAP_LINGER=-1"}), "LOOM_BOOTSTRAP_LINGER");
    expect_ok(probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_JOB=j",
                     "LOOM_JOB_SECRET=" + std::string(64, 'a')}),
              0, 2, "loomrun");
}

static void ranks_started_by_hand_on_a_file_store_need_a_job_id(void**) {
    // Two jobs started from one shell would share the parent-process job id and merge.
    expect_error(probe({"LOOM_RANK=0", "LOOM_SIZE=2"}), "LOOM_JOB is not");
    expect_error(probe({"LOOM_RANK=1", "LOOM_SIZE=2", "LOOM_BOOTSTRAP=file:/tmp/x"}),
                 "LOOM_JOB is not");
    expect_ok(probe({"LOOM_RANK=1", "LOOM_SIZE=2", "LOOM_JOB=mine"}), 1, 2, "loomrun");
}

static void open_mpi_variables_meet_in_a_job_directory(void**) {
    auto r =
        probe({"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
               "OMPI_MCA_ess_base_jobid=4026662913", "PMIX_RANK=3", "TMPDIR=/tmp/loomtest"});
    expect_ok(r, 3, 4, "openmpi");
    assert_string_equal(r.fields.at("job").c_str(), "ompi-4026662913");
    assert_string_equal(
        r.fields.at("bootstrap").c_str(),
        ("file:/tmp/loomtest/loom-bootstrap-" + uid() + "-ompi-4026662913").c_str());
    // Open MPI 5 has no ess_base_jobid; its PMIx namespace names the job.
    r = probe({"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2", "PMIX_NAMESPACE=prterun-h-7@1"});
    expect_ok(r, 0, 2, "openmpi");
    assert_string_equal(r.fields.at("job").c_str(), "pmix-prterun-h-7_1");
    assert_string_equal(r.fields.at("bootstrap").c_str(),
                        ("file:/tmp/loom-bootstrap-" + uid() + "-pmix-prterun-h-7_1").c_str());
}

static void ranks_on_several_hosts_need_a_tcp_rendezvous(void**) {
    expect_error(probe({"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4",
                        "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_MCA_ess_base_jobid=1"}),
                 "set LOOM_BOOTSTRAP=host:port");
    expect_error(probe({"SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_STEP_ID=0", "SLURM_JOB_ID=9",
                        "SLURM_STEP_NUM_NODES=2"}),
                 "SLURM_STEP_NUM_NODES=2");
    auto r =
        probe({"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
               "OMPI_MCA_ess_base_jobid=1", "LOOM_BOOTSTRAP=node0:29500"});
    expect_ok(r, 1, 4, "openmpi");
    assert_string_equal(r.fields.at("bootstrap").c_str(), "node0:29500");
}

static void mpich_hydra_variables_use_the_shared_parent_as_job(void**) {
    auto a = probe({"PMI_RANK=1", "PMI_SIZE=3", "MPI_LOCALNRANKS=3"});
    auto b = probe({"PMI_RANK=2", "PMI_SIZE=3", "MPI_LOCALNRANKS=3"});
    expect_ok(a, 1, 3, "mpich");
    expect_ok(b, 2, 3, "mpich");
    // Both probes are children of this test: the same parent, so the same job and directory.
    std::string job = a.fields.at("job");
    assert_true(job.rfind("p" + std::to_string(getpid()) + ".", 0) == 0);
    assert_string_equal(job.c_str(), b.fields.at("job").c_str());
    assert_string_equal(a.fields.at("bootstrap").c_str(), b.fields.at("bootstrap").c_str());
    expect_error(probe({"PMI_RANK=1"}), "PMI_SIZE is not");
    expect_error(probe({"PMI_RANK=x", "PMI_SIZE=2"}), "PMI_RANK='x' is not an integer");
}

static void slurm_variables_count_inside_an_srun_step_only(void**) {
    auto r = probe({"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_JOB_ID=777", "SLURM_STEP_ID=0",
                    "SLURM_STEP_NUM_NODES=1"});
    expect_ok(r, 5, 8, "slurm");
    assert_string_equal(r.fields.at("job").c_str(), "slurm-777.0");
    // A batch script sees the allocation's SLURM_PROCID/NTASKS but is not a rank of it.
    expect_ok(probe({"SLURM_PROCID=0", "SLURM_NTASKS=8", "SLURM_JOB_ID=777"}), 0, 1, "single");
}

static void pmix_rank_takes_its_size_from_the_launcher(void**) {
    auto r = probe({"PMIX_RANK=1", "PMIX_NAMESPACE=ns", "SLURM_NTASKS=2", "PMIX_LOCAL_SIZE=2"});
    expect_ok(r, 1, 2, "pmix");
    assert_string_equal(r.fields.at("job").c_str(), "pmix-ns");
    expect_error(probe({"PMIX_RANK=1", "PMIX_NAMESPACE=ns"}), "PMIX_RANK=1 is set but");
}

static void job_without_launcher_id_hashes_the_rendezvous(void**) {
    auto a = probe({"LOOM_RANK=0", "LOOM_SIZE=2", "LOOM_BOOTSTRAP=10.0.0.1:29500"});
    auto b = probe({"LOOM_RANK=1", "LOOM_SIZE=2", "LOOM_BOOTSTRAP=10.0.0.1:29500"});
    expect_ok(a, 0, 2, "loomrun");
    assert_true(a.fields.at("job").rfind("h", 0) == 0);
    assert_string_equal(a.fields.at("job").c_str(), b.fields.at("job").c_str());
}

static void connect_store_checks_its_address(void**) {
    bootstrap::identity one;
    bootstrap::identity two;
    two.size = 2;
    for (const char* bad : {"nohost", ":80", "h:0", "h:x", "file:", "::1:80"}) {
        auto s = bootstrap::connect_store(bad, two, 1.0);
        assert_false(s.is_ok());
        assert_int_equal(s.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    }
    assert_false(bootstrap::connect_store("", two, 1.0).is_ok());  // two ranks need a place
    two.rank = 2;
    assert_int_equal(bootstrap::connect_store("127.0.0.1:1", two, 1.0).error().code(),
                     LOOM_ERR_INVALID_ARGUMENT);
    // One rank: an in-process store with the same contract.
    auto s = bootstrap::connect_store("", one, 1.0);
    assert_true(s.is_ok());
    kv_store& store = **s;
    assert_true(store.set("k", "v").is_ok());
    assert_int_equal(store.set("k", "w").code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_string_equal(store.get("k", 0.1)->c_str(), "v");
    auto missing = store.get("absent", 0.05);
    assert_int_equal(missing.error().code(), LOOM_ERR_TIMEOUT);
    assert_non_null(std::strstr(missing.error().message().c_str(), "'absent'"));
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s IDENTITY_PROBE\n", argv[0]);
        return 2;
    }
    probe_path                      = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_launcher_is_one_rank_without_rendezvous),
        cmocka_unit_test(loomrun_variables_give_rank_size_job_and_rendezvous),
        cmocka_unit_test(loomrun_variables_that_disagree_are_invalid),
        cmocka_unit_test(limits_and_secrets_are_checked),
        cmocka_unit_test(ranks_started_by_hand_on_a_file_store_need_a_job_id),
        cmocka_unit_test(open_mpi_variables_meet_in_a_job_directory),
        cmocka_unit_test(ranks_on_several_hosts_need_a_tcp_rendezvous),
        cmocka_unit_test(mpich_hydra_variables_use_the_shared_parent_as_job),
        cmocka_unit_test(slurm_variables_count_inside_an_srun_step_only),
        cmocka_unit_test(pmix_rank_takes_its_size_from_the_launcher),
        cmocka_unit_test(job_without_launcher_id_hashes_the_rendezvous),
        cmocka_unit_test(connect_store_checks_its_address),
    };
    return LOOM_RUN_TESTS("bootstrap_identity", tests);
}
