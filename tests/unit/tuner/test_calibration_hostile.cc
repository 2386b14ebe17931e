// SPDX-License-Identifier: Apache-2.0
// Calibration files as an attacker or an unlucky operator writes them: inputs the
// calibration fuzz target (fuzz/) turned up, a FIFO where the file should be, a huge file.
// Each is a clear error naming the line and the field, never undefined behaviour or a hang.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "base/text_file.hh"
#include "shape_of.hh"
#include "test_main.hh"
#include "tuner/calibration.hh"

using namespace loom;

namespace {

void expect_refused(const std::string& line, const std::string& must_contain) {
    test::expect_error(tuner::from_line(line), LOOM_ERR_PARSE, must_contain, line);
}

void fail_on_hang(int) {
    const char msg[] = "not ok - loading a FIFO as the calibration file blocked\n";
    (void)!::write(1, msg, sizeof msg - 1);
    ::_exit(1);
}

const std::string prefix = "host=a transport=shm alpha_us=1 bw_GBps=2 ";

}  // namespace

// Fuzz find (calibration.cc, ranks=): a double beyond int's range was converted to int
// (undefined behaviour) before the whole-number check.
static void ranks_beyond_int_are_refused(void**) {
    expect_refused(prefix + "ranks=1e10", "ranks='1e10' is not a whole number from 1 to");
    expect_refused(prefix + "ranks=-1e300", "ranks='-1e300'");
    expect_refused(prefix + "ranks=2147483648", "ranks='2147483648'");
    expect_refused(prefix + "ranks=inf", "ranks='inf'");
    expect_refused(prefix + "ranks=nan", "ranks='nan'");
    expect_refused(prefix + "ranks=2.5", "ranks='2.5'");
    auto p = tuner::from_line(prefix + "ranks=16777216");
    assert_true(p.is_ok());
    assert_int_equal(p->ranks, 16777216);
}

// inf and nan passed the "positive number" check (nan compares false both ways; inf > 0),
// and 1e300 GB/s overflowed to an infinite bandwidth: all reach the predicted times.
static void figures_must_be_finite(void**) {
    expect_refused("host=a transport=shm alpha_us=inf bw_GBps=2", "alpha_us='inf'");
    expect_refused("host=a transport=shm alpha_us=1 bw_GBps=nan", "bw_GBps='nan'");
    expect_refused("host=a transport=shm alpha_us=1 bw_GBps=1e308", "bw_GBps='1e308'");
    expect_refused("host=a transport=shm alpha_us=1e-320 bw_GBps=1", "alpha_us='1e-320'");
    expect_refused(prefix + "reduce_GBps=-inf", "reduce_GBps='-inf'");
    auto zero = tuner::from_line(prefix + "reduce_GBps=0");  // "do not count reductions"
    assert_true(zero.is_ok());
}

static void a_fifo_as_calibration_file_is_an_error_not_a_hang(void**) {
    std::string path = test::temp_path("calibration-hostile", "fifo");
    assert_int_equal(::mkfifo(path.c_str(), 0600), 0);
    std::signal(SIGALRM, fail_on_hang);
    ::alarm(10);
    auto loaded = tuner::load(path, "a", "shm");
    ::alarm(0);
    assert_false(loaded.is_ok());
    test::expect_has(loaded.error().message(), "is a FIFO");
    // save() reads the file to keep its other lines: it refuses too, and leaves it alone.
    ::alarm(10);
    status saved = tuner::save(path, *tuner::from_line(prefix));
    ::alarm(0);
    assert_false(saved.is_ok());
    struct stat st {};
    assert_int_equal(::stat(path.c_str(), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    ::unlink(path.c_str());
}

static void a_huge_calibration_file_is_refused(void**) {
    std::string path = test::temp_path("calibration-hostile", "huge");
    {
        std::ofstream out(path);
        std::string comment = "# " + std::string(1000, 'x') + "\n";
        for (size_t written = 0; written <= max_calibration_file_bytes; written += comment.size()) {
            out << comment;
        }
    }
    auto loaded = tuner::load(path, "a", "shm");
    std::remove(path.c_str());
    assert_false(loaded.is_ok());
    test::expect_has(loaded.error().message(), "larger than");
}

static void a_missing_file_is_no_calibration(void**) {
    auto loaded = tuner::load(test::temp_path("calibration-hostile", "none"), "a", "shm");
    assert_true(loaded.is_ok());
    assert_false(loaded->has_value());
}

LOOM_TEST_MAIN("tuner_calibration_hostile", cmocka_unit_test(ranks_beyond_int_are_refused),
               cmocka_unit_test(figures_must_be_finite),
               cmocka_unit_test(a_fifo_as_calibration_file_is_an_error_not_a_hang),
               cmocka_unit_test(a_huge_calibration_file_is_refused),
               cmocka_unit_test(a_missing_file_is_no_calibration))
