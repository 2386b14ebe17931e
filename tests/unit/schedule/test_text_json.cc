// SPDX-License-Identifier: Apache-2.0
// The text and JSON forms: every generated schedule round-trips through both; a schedule
// written by hand in JSON parses and verifies; malformed input is a parse error that says
// where, never a crash.
#include <string>

#include "algorithms/algorithm.hh"
#include "schedule/verifier.hh"
#include "shape_of.hh"
#include "sweep.hh"
#include "test_main.hh"

using namespace loom;
using test::replaced;

static void every_algorithm_round_trips_text_and_json(void**) {
    int checked = 0;
    for (const auto* a : algorithms::catalogue()) {
        for (const char* topo : {"star:6", "torus:2x3", "mesh:3x2", "star:8", "torus:2x2x2"}) {
            auto c = test::make_call(a->primitive, test::shape_of(topo), 37, 1, 2);
            c.peer = 3;
            if (algorithms::check_call(*a, c).code() == LOOM_ERR_NOT_APPLICABLE) {
                continue;
            }
            auto s = test::generate_ok(*a, c);
            assert_true(
                schedule::equal(test::ok_value(schedule::parse_text(schedule::to_text(s))), s));
            assert_true(
                schedule::equal(test::ok_value(schedule::parse_json(schedule::to_json(s, 1))), s));
            auto any = schedule::parse_any(schedule::to_json(s));
            assert_true(any.is_ok() && schedule::equal(*any, s));
            ++checked;
        }
    }
    assert_true(checked >= 5);
}

static const char* hand_written = R"({
  "format": "loom-schedule", "version": 1, "collective": "allreduce", "ranks": 2, "count": 8,
  "schedule": [
    {"rank": 0, "steps": [
      {"kind": "send", "peer": 1, "src": ["in", 0, 8]},
      {"kind": "recv-reduce", "peer": 1, "dst": ["out", 0, 8], "src": ["in", 0, 8]}]},
    {"rank": 1, "steps": [
      {"kind": "recv_reduce", "peer": 0, "dst": ["out", 0, 8], "src": ["in", 0, 8]},
      {"kind": "send", "peer": 0, "src": ["in", 0, 8]}]}
  ]})";

static void hand_written_json_schedule_verifies(void**) {
    auto report = schedule::verify(test::ok_value(schedule::parse_json(hand_written)));
    test::expect_ok(report.result);
    assert_int_equal(report.stats.rounds, 1);
}

static void expect_parse_error(const std::string& text, const std::string& must_contain) {
    test::expect_error(schedule::parse_any(text), LOOM_ERR_PARSE, must_contain,
                       "malformed input: " + text.substr(0, 80));
}

static void malformed_json_is_rejected_with_location(void**) {
    std::string good = hand_written;
    expect_parse_error("{\"format\": ", "not valid JSON");
    expect_parse_error(replaced(good, "\"loom-schedule\"", "\"other\""), "format");
    expect_parse_error(replaced(good, "\"allreduce\"", "\"allsum\""), "collective");
    expect_parse_error(replaced(good, "\"send\", \"peer\": 1", "\"sned\", \"peer\": 1"),
                       "rank 0 step 0: \"kind\" must be one of");
    expect_parse_error(replaced(good, "[\"in\", 0, 8]}]},", "[\"in\", 0]}]},"),
                       "rank 0 step 1 src: a region is");
    expect_parse_error(replaced(good, "\"peer\": 1,", "\"peer\": \"one\","),
                       "\"peer\" must be an integer");
    expect_parse_error(replaced(good, "\"peer\": 1,", "\"prer\": 1,"), "unknown key \"prer\"");
    expect_parse_error(replaced(good, "\"count\": 8", "\"count\": 8.5"),
                       "\"count\" must be an integer");
    expect_parse_error(replaced(good, "[\"out\", 0, 8]", "[\"out\", 0, -8]"), "out of range");
    expect_parse_error(replaced(good, "\"rank\": 1", "\"rank\": 5"), "rank order");
    expect_parse_error(replaced(good, "\"ranks\": 2", "\"ranks\": 1.5"),
                       "\"ranks\" must be an integer");
}

static void malformed_text_is_rejected_with_line(void**) {
    expect_parse_error("hello", "line 1: expected the first line 'loom-schedule 1'");
    std::string good =
        "loom-schedule 1\ncollective=allreduce ranks=1 count=4\nrank 0 scratch=0\n"
        "  0 local_copy dst=out@0+4 src=in@0+4\n";
    assert_true(schedule::parse_text(good).is_ok());
    expect_parse_error(replaced(good, "local_copy", "local_paste"), "line 4: unknown step kind");
    expect_parse_error(replaced(good, "out@0+4", "out@0"), "line 4: bad value for 'dst'");
    expect_parse_error(replaced(good, "  0 local", "  3 local"), "line 4: expected '<index>");
    expect_parse_error(replaced(good, "ranks=1", "ranks=x"), "line 2: bad value for 'ranks'");
    expect_parse_error(replaced(good, "rank 0 scratch=0\n", ""), "step before the first 'rank'");
}

LOOM_TEST_MAIN("schedule_text_json", cmocka_unit_test(every_algorithm_round_trips_text_and_json),
               cmocka_unit_test(hand_written_json_schedule_verifies),
               cmocka_unit_test(malformed_json_is_rejected_with_location),
               cmocka_unit_test(malformed_text_is_rejected_with_line))
