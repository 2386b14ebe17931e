// SPDX-License-Identifier: Apache-2.0
// loomrun's command line (options.cc) and its "[rank] " line prefixing (output.cc), without
// starting any rank.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
std::string prefixed(int rank, const std::vector<std::string>& chunks, bool finish,
                     bool tag = true) {
    int fd = memfd_create("prefixed", MFD_CLOEXEC);
    assert_true(fd >= 0);
    {
        line_prefixer out(rank, fd, tag);
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

// --dpu: a DPU per node of a lattice --fabric; the ranks' transport is dpu and nothing else.
static void dpu_needs_a_lattice_and_takes_the_transport(void**) {
    parsed p = parse({"-n", "8", "--dpu", "--fabric", "torus:2x2x2", "--", "./app"});
    assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::run));
    assert_true(p.opts.dpu);
    assert_string_equal(p.opts.transport.c_str(), "dpu");
    expect_fail({"-n", "8", "--dpu", "--", "./app"}, "--dpu needs --fabric");
    expect_fail(
        {"-n", "8", "--dpu", "--fabric", "torus:2x2x2", "--transport", "tcp", "--", "./app"},
        "transport dpu");
    expect_fail({"-n", "8", "--dpu", "--fabric", "torus:2x2x2", "--link-stats", "--", "./app"},
                "--link-stats");
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

// --fabric FILE: a file that cannot be read or parsed is named with the reason, never taken
// for a malformed shape; a good file without --switch says what it needs.
static void fabric_files_are_opened_and_named(void**) {
    expect_fail({"-n", "4", "--switch", "--fabric", "/nonexistent.json", "--", "./app"},
                "cannot open fabric file '/nonexistent.json': No such file or directory");
    expect_fail({"-n", "4", "--fabric", "/nonexistent.json", "--", "./app"},
                "cannot open fabric file '/nonexistent.json': No such file or directory");
    char bad[] = "/tmp/loomrun-fabric-XXXXXX.json";
    int fd     = mkstemps(bad, 5);
    assert_true(fd >= 0);
    assert_true(write(fd, "{\"nodes\": [", 11) == 11);
    close(fd);
    parsed p = parse({"-n", "4", "--switch", "--fabric", bad, "--", "./app"});
    assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::fail));
    assert_non_null(std::strstr(p.text.c_str(), bad));
    assert_null(std::strstr(p.text.c_str(), "KIND:SIZE"));
    if (geteuid() != 0) {  // root reads any file
        chmod(bad, 0);
        expect_fail({"-n", "4", "--switch", "--fabric", bad, "--", "./app"}, "Permission denied");
    }
    unlink(bad);
}

// The transport flag takes what the drivers take under loomrun; the rest is refused.
static void transport_flag_takes_fault_and_self(void**) {
    assert_string_equal(
        parse({"-n", "2", "--transport", "fault:tcp", "--", "a"}).opts.transport.c_str(),
        "fault:tcp");
    assert_string_equal(parse({"-n", "1", "--transport", "self", "--", "a"}).opts.transport.c_str(),
                        "self");
    expect_fail({"-n", "2", "--transport", "fault:udp", "--", "prog"}, "fault:udp not in");
    assert_true(parse({"-n", "2", "--", "a"}).opts.transport.empty());  // chosen at launch
}

// The user's settings against loomrun's flags: kept, defaulted, or refused with the reason.
static void user_settings_win_or_are_refused(void**) {
    struct row {
        std::vector<const char*> args;
        user_settings user;
        const char* transport;       // expected, or nullptr when refused
        const char* transport_from;  // or, when refused, a part of the reason
        const char* bootstrap;
    };
    const std::vector<row> rows = {
        {{"-n", "2"}, {}, "shm", "loomrun default", ""},
        {{"-n", "2", "--hosts", "netns"},
         {},
         "",
         "left to the ranks: LOOM_TRANSPORT unset, ranks on several hosts",
         ""},
        {{"-n", "2", "--hosts", "netns", "--fabric", "ring:2"}, {}, "tcp", "loomrun default", ""},
        {{"-n", "2", "--hosts", "netns"}, {{"LOOM_TRANSPORT", "ofi"}}, "ofi", "LOOM_TRANSPORT", ""},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "tcp"}}, "tcp", "LOOM_TRANSPORT", ""},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "fault:tcp"}}, "fault:tcp", "LOOM_TRANSPORT", ""},
        {{"-n", "1"}, {{"LOOM_TRANSPORT", "self"}}, "self", "LOOM_TRANSPORT", ""},
        {{"-n", "2", "--transport", "tcp"}, {{"LOOM_TRANSPORT", "tcp"}}, "tcp", "--transport", ""},
        {{"-n", "2"},
         {{"LOOM_TRANSPORT", "fwd:tcp"}, {"LOOM_FABRIC", "ring:2"}},
         "fwd:tcp",
         "LOOM_TRANSPORT",
         ""},
        {{"-n", "2"}, {{"LOOM_BOOTSTRAP", "file:/tmp/x"}}, "shm", "loomrun default", "file:/tmp/x"},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "self"}}, nullptr, "-n is 2", ""},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "udp"}}, nullptr, "unknown transport", ""},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "fault:rdma"}}, nullptr, "unknown transport", ""},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "fault:dpdk"}}, "fault:dpdk", "LOOM_TRANSPORT", ""},
        {{"-n", "2"}, {{"LOOM_TRANSPORT", "fault:verbs"}}, "fault:verbs", "LOOM_TRANSPORT", ""},
        {{"-n", "2", "--transport", "shm"},
         {{"LOOM_TRANSPORT", "tcp"}},
         nullptr,
         "give the transport once",
         ""},
        {{"-n", "4", "--fabric", "ring:4"},
         {{"LOOM_TRANSPORT", "fwd:tcp"}},
         nullptr,
         "wraps the transport in fwd:",
         ""},
        {{"-n", "4", "--fabric", "ring:4"},
         {{"LOOM_FABRIC", "mesh:2x2"}},
         nullptr,
         "LOOM_FABRIC=mesh:2x2 conflicts with --fabric ring:4",
         ""},
        {{"-n", "4", "--fabric", "ring:4"},
         {{"LOOM_FABRIC", "ring:4"}},
         "shm",
         "loomrun default",
         ""},
        {{"-n", "4", "--fabric", "ring:4"},
         {{"LOOM_PROGRESS", "caller"}},
         nullptr,
         "LOOM_PROGRESS=caller",
         ""},
        {{"-n", "2", "--hosts", "netns"},
         {{"LOOM_BOOTSTRAP", "127.0.0.1:5000"}},
         nullptr,
         "unset LOOM_BOOTSTRAP",
         ""},
        {{"-n", "2", "--hosts", "netns"},
         {{"LOOM_TCP_ADDR", "10.0.0.1"}},
         nullptr,
         "unset LOOM_TCP_ADDR",
         ""},
        {{"-n", "2", "--hosts", "netns"},
         {{"LOOM_OFI_ADDR", "10.0.0.1"}},
         nullptr,
         "unset LOOM_OFI_ADDR",
         ""},
        {{"-n", "2", "--switch"}, {{"LOOM_SWITCH", "tcp:127.0.0.1:9"}}, nullptr, "--switch", ""},
    };
    for (const auto& r : rows) {
        std::vector<const char*> args = r.args;
        args.insert(args.end(), {"--", "./app"});
        parsed p = parse(args);
        assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::run));
        auto got = resolve_rank_settings(p.opts, r.user);
        std::string what =
            std::string(r.args[1]) +
            (r.user.empty() ? "" : " " + r.user.begin()->first + "=" + r.user.begin()->second);
        if (r.transport == nullptr) {
            if (got || got.error().message().find(r.transport_from) == std::string::npos) {
                LOOM_FAIL(what + ": expected a refusal naming '" + r.transport_from + "', got " +
                          (got ? "a transport" : got.error().message()));
            }
            continue;
        }
        if (!got) {
            LOOM_FAIL(what + ": refused: " + got.error().message());
        }
        if (got->transport != r.transport || got->transport_from != r.transport_from ||
            got->bootstrap != r.bootstrap) {
            LOOM_FAIL(what + ": got transport " + got->transport + " (" + got->transport_from +
                      "), bootstrap '" + got->bootstrap + "'");
        }
    }
    // The user's job id and secret.
    parsed p = parse({"-n", "2", "--", "./app"});
    auto got = resolve_rank_settings(p.opts, {{"LOOM_JOB", "exp.sweep"},
                                              {"LOOM_JOB_SECRET", std::string(64, 'a')},
                                              {"LOOM_BOOTSTRAP", "127.0.0.1:5000"}});
    assert_true(got.is_ok());
    assert_string_equal(got->job.c_str(), "exp.sweep");
    assert_string_equal(got->job_from.c_str(), "LOOM_JOB");
    assert_string_equal(got->secret.c_str(), std::string(64, 'a').c_str());
    got = resolve_rank_settings(p.opts, {{"LOOM_JOB_SECRET", std::string(64, 'b')}});
    assert_true(got.is_ok() && got->secret == std::string(64, 'b') && got->bootstrap.empty());
    got = resolve_rank_settings(p.opts, {});
    assert_true(got.is_ok() && got->secret.empty());  // none given: a fresh one per launch
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

static void no_tag_output_passes_whole_lines_bare(void**) {
    std::string out = prefixed(3, {"hel", "lo\nwor", "ld\npart"}, true, false);
    assert_string_equal(out.c_str(), "hello\nworld\npart\n");
    assert_string_equal(prefixed(1, {"a\nb"}, false, false).c_str(), "a\n");
    parsed p = parse({"-n", "2", "--no-tag-output", "--", "./app"});
    assert_int_equal(static_cast<int>(p.what), static_cast<int>(parsed::action::run));
    assert_false(p.opts.tag_output);
    assert_true(parse({"-n", "2", "--", "./app"}).opts.tag_output);
}

LOOM_TEST_MAIN("loomrun_options", cmocka_unit_test(program_after_double_dash_keeps_its_own_flags),
               cmocka_unit_test(fabric_must_be_a_lattice_of_n_ranks),
               cmocka_unit_test(fabric_files_are_opened_and_named),
               cmocka_unit_test(transport_flag_takes_fault_and_self),
               cmocka_unit_test(user_settings_win_or_are_refused),
               cmocka_unit_test(program_without_double_dash_starts_at_first_word),
               cmocka_unit_test(bad_command_lines_say_what_is_allowed),
               cmocka_unit_test(help_version_and_config_need_no_program),
               cmocka_unit_test(durations_take_s_m_h),
               cmocka_unit_test(dpu_needs_a_lattice_and_takes_the_transport),
               cmocka_unit_test(every_line_gets_its_rank_prefix),
               cmocka_unit_test(no_tag_output_passes_whole_lines_bare))
