// SPDX-License-Identifier: Apache-2.0
// read_text_file: what every reader of a whole input file goes through. A FIFO (or any
// non-regular file) is refused at once instead of blocking the reader for ever; a file
// above the limit is refused before it is read; a missing one reports its errno.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>

#include "base/text_file.hh"
#include "test_main.hh"

using namespace loom;

namespace {

void write_file(const std::string& path, const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    assert_non_null(f);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
}

// Without the fix the open itself blocks (no writer ever comes): the alarm turns that hang
// into a failure of this test.
void fail_on_hang(int) {
    const char msg[] = "not ok - a read of a FIFO blocked\n";
    (void)!::write(1, msg, sizeof msg - 1);
    ::_exit(1);
}

}  // namespace

static void a_regular_file_is_read_whole(void**) {
    std::string path = test::temp_path("text-file", "regular");
    write_file(path, "line one\nline two\n");
    auto text = read_text_file(path, "test file", 1024);
    assert_true(text.is_ok());
    assert_string_equal(text->c_str(), "line one\nline two\n");
    std::remove(path.c_str());
}

static void a_fifo_is_refused_at_once(void**) {
    std::string path = test::temp_path("text-file", "fifo");
    assert_int_equal(::mkfifo(path.c_str(), 0600), 0);
    std::signal(SIGALRM, fail_on_hang);
    ::alarm(10);
    auto text = read_text_file(path, "schedule file", 1024);
    ::alarm(0);
    ::unlink(path.c_str());
    assert_false(text.is_ok());
    assert_int_equal(text.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    test::expect_has(text.error().message(),
                     "schedule file '" + path + "' is a FIFO, not a regular file");
}

static void a_directory_is_refused(void**) {
    auto text = read_text_file("/", "fabric file", 1024);
    assert_false(text.is_ok());
    test::expect_has(text.error().message(), "fabric file '/' is a directory");
}

static void a_file_over_the_limit_is_refused(void**) {
    std::string path = test::temp_path("text-file", "large");
    write_file(path, std::string(2000, 'x'));
    auto text = read_text_file(path, "calibration file", 1000);
    std::remove(path.c_str());
    assert_false(text.is_ok());
    assert_int_equal(text.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    test::expect_has(text.error().message(), "is 2000 bytes, larger than 1000");
}

static void a_missing_file_reports_its_errno(void**) {
    int open_errno = 0;
    auto text =
        read_text_file(test::temp_path("text-file", "none"), "schedule file", 1024, &open_errno);
    assert_false(text.is_ok());
    assert_int_equal(text.error().code(), LOOM_ERR_SYSTEM);
    assert_int_equal(open_errno, ENOENT);
    test::expect_has(text.error().message(), "cannot open schedule file");
}

static void a_stream_is_bounded_too(void**) {
    int fds[2];
    assert_int_equal(::pipe(fds), 0);
    assert_int_equal(::write(fds[1], "0123456789", 10), 10);
    ::close(fds[1]);
    auto text = read_text_stream(fds[0], "schedule on standard input", 4);
    ::close(fds[0]);
    assert_false(text.is_ok());
    test::expect_has(text.error().message(), "schedule on standard input is larger than 4 bytes");
}

LOOM_TEST_MAIN("base_text_file", cmocka_unit_test(a_regular_file_is_read_whole),
               cmocka_unit_test(a_fifo_is_refused_at_once),
               cmocka_unit_test(a_directory_is_refused),
               cmocka_unit_test(a_file_over_the_limit_is_refused),
               cmocka_unit_test(a_missing_file_reports_its_errno),
               cmocka_unit_test(a_stream_is_bounded_too))
