// runtime/base: status strings for every code, results, and the parameter registry's
// validation (an invalid value is an error that says what is allowed, never ignored).
#include <cstring>
#include <string>

#include "base/params.hh"
#include "base/status.hh"
#include "test_main.hh"

using namespace loom;

static void every_status_has_a_distinct_string(void**) {
    for (int a = LOOM_SUCCESS; a <= LOOM_ERR_VERIFY; ++a) {
        const char* sa = loom_status_string(static_cast<loom_status_t>(a));
        assert_non_null(sa);
        assert_string_not_equal(sa, "unknown status");
        for (int b = a + 1; b <= LOOM_ERR_VERIFY; ++b) {
            assert_string_not_equal(sa, loom_status_string(static_cast<loom_status_t>(b)));
        }
    }
    assert_string_equal(loom_status_string(static_cast<loom_status_t>(999)), "unknown status");
}

static void status_to_string_names_class_and_message(void**) {
    status st = invalid_argument("root 9 is outside 0..3");
    assert_false(st.is_ok());
    assert_string_equal(st.to_string().c_str(), "invalid argument: root 9 is outside 0..3");
    result<int> r = st;
    assert_false(r.is_ok());
    assert_int_equal(r.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    result<int> ok = 5;
    assert_true(ok.is_ok());
    assert_int_equal(*ok, 5);
}

static void dtype_sizes_match_the_types(void**) {
    assert_int_equal(loom_dtype_size(LOOM_INT8), 1);
    assert_int_equal(loom_dtype_size(LOOM_BFLOAT16), 2);
    assert_int_equal(loom_dtype_size(LOOM_FLOAT16), 2);
    assert_int_equal(loom_dtype_size(LOOM_FLOAT32), 4);
    assert_int_equal(loom_dtype_size(LOOM_UINT64), 8);
    assert_int_equal(loom_dtype_size(static_cast<loom_dtype_t>(77)), 0);
}

static void registry_rejects_invalid_values_with_allowed_list(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_PORT_MODEL", "single-port").is_ok());
    assert_string_equal(reg.get_string("LOOM_PORT_MODEL").c_str(), "single-port");
    status bad = reg.set("LOOM_PORT_MODEL", "dual-port");
    assert_int_equal(bad.code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(bad.message().c_str(), "allowed values are per-edge|single-port"));
    // The rejected value did not replace the previous one.
    assert_string_equal(reg.get_string("LOOM_PORT_MODEL").c_str(), "single-port");
    assert_int_equal(reg.set("LOOM_NO_SUCH_THING", "1").code(), LOOM_ERR_INVALID_ARGUMENT);
}

static void every_parameter_is_documented_and_its_default_valid(void**) {
    const auto& reg = params::registry::global();
    assert_true(reg.all().size() >= 2);
    for (const auto& p : reg.all()) {
        assert_true(p.name.rfind("LOOM_", 0) == 0);
        assert_false(p.description.empty());
        assert_true(params::validate(p, p.default_value).is_ok());
    }
    assert_non_null(std::strstr(reg.describe().c_str(), "LOOM_LOG_LEVEL="));
}

static void secrets_are_never_printed(void**) {
    auto& reg          = params::registry::global();
    const char* secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_true(reg.set("LOOM_JOB_SECRET", secret).is_ok());
    std::string text = reg.describe();
    assert_null(std::strstr(text.c_str(), secret));
    assert_non_null(std::strstr(text.c_str(), "LOOM_JOB_SECRET=(set, not shown)"));
    assert_true(params::is_secret("LOOM_INC_TICKET"));
    assert_false(params::is_secret("LOOM_JOB"));
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_status_has_a_distinct_string),
        cmocka_unit_test(status_to_string_names_class_and_message),
        cmocka_unit_test(dtype_sizes_match_the_types),
        cmocka_unit_test(registry_rejects_invalid_values_with_allowed_list),
        cmocka_unit_test(every_parameter_is_documented_and_its_default_valid),
        cmocka_unit_test(secrets_are_never_printed),
    };
    return LOOM_RUN_TESTS("base_status_params", tests);
}
