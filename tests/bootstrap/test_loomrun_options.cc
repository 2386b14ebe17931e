// loomrun's command line (options.cc) and its "[rank] " line prefixing (output.cc), without
// starting any rank.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "loomrun.hh"
#include "test_main.hh"

using namespace loom::loomrun;

namespace {

parsed parse(std::vector<const char*> args) {
    args.insert(args.begin(), "loomrun");
    return parse_options(static_cast<int>(args.size()), args.data());
}

void expect_fail(std::vector<const char*> args, const char* needle) {
    parsed p = parse(args);
    if (p.what != parsed::action::fail || p.text.find(needle) == std::string::npos) {
        LOOM_FAIL(std::string("expected a failure naming '") + needle + "', got: " + p.text);
    }
}

// Feeds `chunks` to a prefixer writing into a memory file and returns what came out (a
// file, not a pipe: a pipe would fill up and block the writer of the long-line case).
std::string prefixed(int rank, const std::vector<std::string>& chunks, bool finish) {
    int fd = memfd_create("prefixed", MFD_CLOEXEC);
    assert_true(fd >= 0);
    {
        line_prefixer out(rank, fd);
        for (const auto& c : chunks) {
            out.feed(c.data(), c.size());
        }
        if (finish) {
            out.finish();
        }
    }
    std::string text;
    char buf[4096];
    lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
        text.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return text;
}

}  // namespace

// --fabric: a lattice whose size is -n; --link-stats only with it.
static void fabric_must_be_a_lattice_of_n_ranks(void**) {
    parsed p = parse({"-n", "8", "--fabric", "torus:2x2x2", "--link-stats", "--", "./app"});
    assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::run));
    assert_string_equal(p.opts.fabric.c_str(), "torus:2x2x2");
    assert_true(p.opts.link_stats);
    expect_fail({"-n", "4", "--fabric", "torus:2x2x2", "--", "./app"}, "must be equal");
    expect_fail({"-n", "8", "--fabric", "star:8", "--", "./app"}, "lattice");
    expect_fail({"-n", "8", "--fabric", "torus:2xq", "--", "./app"}, "torus:2xq");
    expect_fail({"-n", "8", "--link-stats", "--", "./app"}, "--fabric");
}

static void program_after_double_dash_keeps_its_own_flags(void**) {
    parsed p = parse({"-n", "4", "--transport", "tcp", "--", "./app", "-n", "7", "--timeout"});
    assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::run));
    assert_int_equal(p.opts.ranks, 4);
    assert_string_equal(p.opts.transport.c_str(), "tcp");
    assert_string_equal(p.opts.hosts.c_str(), "local");
    assert_int_equal(p.opts.command.size(), 4);
    assert_string_equal(p.opts.command[0].c_str(), "./app");
    assert_string_equal(p.opts.command[1].c_str(), "-n");
    assert_true(p.opts.timeout_s == 0);
}

static void program_without_double_dash_starts_at_first_word(void**) {
    parsed p = parse({"-n", "2", "--hosts", "netns", "--timeout", "1.5m", "prog", "--flag", "x"});
    assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::run));
    assert_string_equal(p.opts.hosts.c_str(), "netns");
    assert_true(p.opts.timeout_s == 90);
    assert_int_equal(p.opts.command.size(), 3);
    assert_string_equal(p.opts.command[0].c_str(), "prog");
    assert_string_equal(p.opts.command[1].c_str(), "--flag");
}

static void bad_command_lines_say_what_is_allowed(void**) {
    expect_fail({"--", "prog"}, "-n N is required");
    expect_fail({"-n", "0", "--", "prog"}, "integer in 1..4096");
    expect_fail({"-n", "two", "--", "prog"}, "integer in 1..4096");
    expect_fail({"-n", "2"}, "no program given");
    expect_fail({"-n", "2", "--transport", "udp", "--", "prog"}, "udp not in");
    expect_fail({"-n", "2", "--hosts", "vm", "--", "prog"}, "vm not in");
    expect_fail({"-n", "2", "--timeout", "-1", "--", "prog"}, "positive number of seconds");
    expect_fail({"-n", "2", "--timeout", "5x", "--", "prog"}, "positive number of seconds");
    expect_fail({"-n", "2", "--grace", "0", "--", "prog"}, "--grace '0'");
    expect_fail({"-n", "2", "--bogus", "--", "prog"}, "--bogus");
}

static void help_version_and_config_need_no_program(void**) {
    parsed help = parse({"--help"});
    assert_int_equal(static_cast<int>(help.what), static_cast<int>(parsed::action::print));
    assert_non_null(std::strstr(help.text.c_str(), "--hosts"));
    assert_non_null(std::strstr(help.text.c_str(), "Exit status"));
    parsed version = parse({"--version"});
    assert_int_equal(static_cast<int>(version.what), static_cast<int>(parsed::action::run));
    assert_true(version.opts.show_version);
    assert_true(parse({"--config"}).opts.show_config);
}

static void durations_take_s_m_h(void**) {
    assert_true(*parse_duration("--timeout", "2") == 2);
    assert_true(*parse_duration("--timeout", "0.5s") == 0.5);
    assert_true(*parse_duration("--timeout", "2m") == 120);
    assert_true(*parse_duration("--timeout", "1h") == 3600);
    assert_false(parse_duration("--timeout", "").is_ok());
    assert_false(parse_duration("--timeout", "inf").is_ok());
    assert_false(parse_duration("--timeout", "nan").is_ok());
}

static void every_line_gets_its_rank_prefix(void**) {
    // Lines split across reads, several lines in one read, and a last line without newline.
    std::string out = prefixed(3, {"hel", "lo\nwor", "ld\nsecond\nthird\npart"}, true);
    assert_string_equal(out.c_str(), "[3] hello\n[3] world\n[3] second\n[3] third\n[3] part\n");
    // Without finish() a partial line stays back.
    assert_string_equal(prefixed(12, {"a\nb"}, false).c_str(), "[12] a\n");
    // A very long line without newline still gets through, in pieces.
    std::string big(100000, 'x');
    std::string long_out = prefixed(0, {big}, false);
    assert_true(long_out.rfind("[0] xxx", 0) == 0);
    assert_true(long_out.size() == big.size() + 5);
}

LOOM_TEST_MAIN("loomrun_options", cmocka_unit_test(program_after_double_dash_keeps_its_own_flags),
               cmocka_unit_test(fabric_must_be_a_lattice_of_n_ranks),
               cmocka_unit_test(program_without_double_dash_starts_at_first_word),
               cmocka_unit_test(bad_command_lines_say_what_is_allowed),
               cmocka_unit_test(help_version_and_config_need_no_program),
               cmocka_unit_test(durations_take_s_m_h),
               cmocka_unit_test(every_line_gets_its_rank_prefix))
