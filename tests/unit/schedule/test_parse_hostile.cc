// SPDX-License-Identifier: Apache-2.0
// Inputs the schedule fuzz targets (fuzz/) turned up, and their neighbours: each is a clear
// LOOM_ERR_PARSE naming the line or the field, never a crash, an exception out of a
// printer, undefined behaviour or a schedule that prints differently from what was read.
#include <cstdint>
#include <string>

#include "schedule/schedule.hh"
#include "schedule/verifier.hh"
#include "shape_of.hh"
#include "test_main.hh"

using namespace loom;
using test::replaced;

namespace {

const std::string good_text =
    "loom-schedule 1\n"
    "collective=allreduce ranks=2 count=4 root=0 peer=1 dtype_size=4 segments=1 channels=1 "
    "algorithm=ring topology=star:2\n"
    "rank 0 scratch=0\n"
    "  0 send peer=1 src=in@0+4\n"
    "  1 recv_reduce peer=1 dst=out@0+4 src=in@0+4\n"
    "rank 1 scratch=0\n"
    "  0 send peer=0 src=in@0+4\n"
    "  1 recv_reduce peer=0 dst=out@0+4 src=in@0+4 deps=0\n";

const std::string good_json = R"({"format": "loom-schedule", "version": 1,
  "collective": "allreduce", "ranks": 2, "count": 4, "algorithm": "ring",
  "schedule": [
    {"rank": 0, "scratch": 0, "steps": [{"kind": "send", "peer": 1, "tag": 0, "src": ["in", 0, 4]},
      {"kind": "recv_reduce", "peer": 1, "dst": ["out", 0, 4], "src": ["in", 0, 4]}]},
    {"rank": 1, "steps": [{"kind": "send", "peer": 0, "src": ["in", 0, 4]},
      {"kind": "recv_reduce", "peer": 0, "dst": ["out", 0, 4], "src": ["in", 0, 4], "deps": [0]}]}
  ]})";

void expect_parse_error(const result<schedule::schedule>& r, const std::string& must_contain) {
    test::expect_error(r, LOOM_ERR_PARSE, must_contain, "a hostile schedule");
}

void text_rejects(const std::string& from, const std::string& to, const std::string& message) {
    expect_parse_error(schedule::parse_text(replaced(good_text, from, to)), message);
}

void json_rejects(const std::string& from, const std::string& to, const std::string& message) {
    expect_parse_error(schedule::parse_json(replaced(good_json, from, to)), message);
}

}  // namespace

static void the_good_inputs_parse_and_verify(void**) {
    for (const std::string* text : {&good_text, &good_json}) {
        assert_true(schedule::verify(test::ok_value(schedule::parse_any(*text))).result.is_ok());
    }
}

// Fuzz find: a non-UTF-8 byte in algorithm= was read from text, and printing the schedule
// as JSON then threw out of nlohmann's serializer (terminate).
static void header_names_must_be_printable(void**) {
    text_rejects("algorithm=ring", "algorithm=ri\xf3\xff", "line 2: bad value for 'algorithm'");
    text_rejects("topology=star:2", "topology=\x01", "line 2: bad value for 'topology'");
    json_rejects("\"algorithm\": \"ring\"", "\"algorithm\": \"r\\u0001\"",
                 "\"algorithm\" must be a name");
    json_rejects("\"algorithm\": \"ring\"", "\"algorithm\": 7", "\"algorithm\" must be a name");
    // A schedule built in code with such a name still prints (bytes replaced), never throws.
    auto s = schedule::parse_text(good_text);
    assert_true(s.is_ok());
    s->info.algorithm = "ri\xf3\xff";
    assert_true(schedule::to_json(*s).find("\"algorithm\"") != std::string::npos);
}

// Fuzz find: peer=-7 parsed, but printing leaves a negative peer out, so the printed form
// read back differently.
static void negative_peers_are_refused(void**) {
    text_rejects("  0 send peer=1", "  0 send peer=-7", "line 4: peer=-7 is negative");
    json_rejects("\"peer\": 1, \"tag\"", "\"peer\": -7, \"tag\"", "peer=-7 is negative");
}

// Fuzz find: an offset near INT64_MAX made the region's end (offset + count) overflow in
// the verifier (signed overflow, undefined behaviour).
static void region_offsets_are_bounded(void**) {
    text_rejects("src=in@0+4\n  1", "src=in@9223372036854775807+4\n  1",
                 "line 4: region offset 9223372036854775807 is outside");
    text_rejects("src=in@0+4\n  1", "src=in@-1+4\n  1", "line 4: region offset -1");
    json_rejects("\"src\": [\"in\", 0, 4]}", "\"src\": [\"in\", 9223372036854775807, 4]}",
                 "region offset");
    json_rejects("\"src\": [\"in\", 0, 4]}", "\"src\": [\"in\", 18446744073709551615, 4]}",
                 "region offset 18446744073709551615 is out of range");
}

// A step lists its dependencies in a 16-bit count: 70,000 of them were silently cut to
// 4,464 (70000 mod 65536).
static void too_many_dependencies_are_refused(void**) {
    std::string deps = "0";
    for (int i = 1; i < 70000; ++i) {
        deps += ",0";
    }
    text_rejects("deps=0", "deps=" + deps, "line 8: 70000 dependencies");
    text_rejects("deps=0", "deps=4294967295", "line 8: bad value for 'deps'");
    json_rejects("\"deps\": [0]", "\"deps\": [4294967295]", "dependency 4294967295");
}

// JSON integers were converted to the field's type unchecked: ranks 2^32 + 2 became 2, a
// count of 2^63 became negative, tag -1 became 4294967295.
static void json_integers_must_fit_their_field(void**) {
    json_rejects("\"ranks\": 2", "\"ranks\": 4294967298", "\"ranks\" is out of range");
    json_rejects("\"count\": 4", "\"count\": 9223372036854775808", "\"count\" is out of range");
    json_rejects("\"tag\": 0", "\"tag\": -1", "\"tag\" is out of range");
    json_rejects("\"peer\": 1, \"tag\"", "\"peer\": 2147483648, \"tag\"",
                 "\"peer\" is out of range");
    json_rejects("\"scratch\": 0", "\"scratch\": -5", "scratch -5 is out of range");
}

// Fuzz find: "version": 1.9e19 was converted to int before the comparison with 1
// (undefined behaviour in nlohmann's from_json).
static void a_huge_version_is_an_unsupported_version(void**) {
    for (const char* v : {"19223372036854775807", "1.5", "-1e300", "\"1\""}) {
        json_rejects("\"version\": 1", std::string("\"version\": ") + v, "unsupported \"version\"");
    }
}

// Header numbers outside what any schedule can mean are refused where they are read.
static void header_numbers_are_checked(void**) {
    text_rejects("ranks=2", "ranks=0", "line 2: ranks=0 must be at least 1");
    text_rejects("count=4", "count=-4", "line 2: count=-4 must be in 0..");
    text_rejects("count=4", "count=9223372036854775807", "count=9223372036854775807 must be in");
    text_rejects("segments=1", "segments=-1", "segments=-1 must be at least 1");
    text_rejects("channels=1", "channels=0", "channels=0 must be at least 1");
    text_rejects("dtype_size=4", "dtype_size=0", "dtype_size=0 must be at least 1");
    text_rejects("rank 0 scratch=0", "rank 0 scratch=-3", "line 3: bad rank attribute");
    json_rejects("\"count\": 4", "\"count\": -4", "count=-4 must be in 0..");
    json_rejects("\"ranks\": 2", "\"ranks\": 0", "ranks=0 must be at least 1");
}

LOOM_TEST_MAIN("schedule_parse_hostile", cmocka_unit_test(the_good_inputs_parse_and_verify),
               cmocka_unit_test(header_names_must_be_printable),
               cmocka_unit_test(negative_peers_are_refused),
               cmocka_unit_test(region_offsets_are_bounded),
               cmocka_unit_test(too_many_dependencies_are_refused),
               cmocka_unit_test(json_integers_must_fit_their_field),
               cmocka_unit_test(header_numbers_are_checked),
               cmocka_unit_test(a_huge_version_is_an_unsupported_version))
