// SPDX-License-Identifier: Apache-2.0
// Test harness helpers: CMocka with TAP output (docs/architecture.md#rule-tests), printed seeds,
// one place for "run these tests".
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

extern "C" {
#include <cmocka.h>
}

#include <string>

namespace loom::test {

/// Runs a group with TAP output (so Meson counts passes, failures and skips).
inline int run_group(const char* name, const CMUnitTest* tests, size_t n) {
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return _cmocka_run_group_tests(name, tests, n, nullptr, nullptr);
}

}  // namespace loom::test

#define LOOM_RUN_TESTS(name, tests) \
    ::loom::test::run_group(name, tests, sizeof(tests) / sizeof((tests)[0]))

/// The main() of a suite without arguments: runs the entries (cmocka_unit_test(f), …) as
/// the group `name`.
#define LOOM_TEST_MAIN(name, ...)                       \
    int main() {                                        \
        const CMUnitTest loom_suite_[] = {__VA_ARGS__}; \
        return LOOM_RUN_TESTS(name, loom_suite_);       \
    }

/// Fails the test with a formatted message (cmocka's fail_msg, with std::string).
#define LOOM_FAIL(msg) fail_msg("%s", std::string(msg).c_str())

namespace loom::test {

/// Fails the test unless `message` contains `part`.
inline void expect_has(const std::string& message, const std::string& part) {
    if (message.find(part) == std::string::npos) {
        LOOM_FAIL("message '" + message + "' lacks '" + part + "'");
    }
}

/// `text` with its first `from` replaced by `to`; fails the test when `from` is not there
/// (a test that edits a good input must edit what it means to).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    if (at == std::string::npos) {
        LOOM_FAIL("test bug: '" + from + "' is not in the input");
    }
    return text.replace(at, from.size(), to);
}

/// A path in /tmp unique to this process: /tmp/loom-test-SUITE-PID-NAME.
inline std::string temp_path(const char* suite, const char* name) {
    return "/tmp/loom-test-" + std::string(suite) + "-" + std::to_string(::getpid()) + "-" + name;
}

}  // namespace loom::test
