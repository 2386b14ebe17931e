// SPDX-License-Identifier: Apache-2.0
// runtime/base: status strings for every code, results, and the parameter registry: typed
// handles, validation (an invalid value is an error that says what is allowed, never
// ignored), the catalog of every component's declarations, the misspelling check.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "base/params.hh"
#include "base/status.hh"
#include "bootstrap/bootstrap_params.hh"
#include "comm/params_catalog.hh"
#include "test_main.hh"
#include "tuner/tuner_params.hh"

using namespace loom;

// Handles of every type, declared here as a component would declare its own.
namespace test_params {
params::component component{"test"};
const params::int_param count{component, "LOOM_TEST_COUNT", "7", "items", "an integer"};
const params::real_param ratio{component, "LOOM_TEST_RATIO", "0.5", "", "a number"};
const params::string_param label{component, "LOOM_TEST_LABEL", "plain", "a string"};
const params::bool_param flag{component, "LOOM_TEST_FLAG", "false", "a boolean"};
const params::choice_param mode{component, "LOOM_TEST_MODE", "a", "a|b", "a choice"};
}  // namespace test_params

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
    assert_string_equal(tuner::params::port_model.get().c_str(), "single-port");
    status bad = reg.set("LOOM_PORT_MODEL", "dual-port");
    assert_int_equal(bad.code(), LOOM_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(bad.message().c_str(), "allowed values are per-edge|single-port"));
    // The rejected value did not replace the previous one.
    assert_string_equal(tuner::params::port_model.get().c_str(), "single-port");
    assert_int_equal(reg.set("LOOM_NO_SUCH_THING", "1").code(), LOOM_ERR_INVALID_ARGUMENT);
}

static void every_parameter_is_documented_and_its_default_valid(void**) {
    const auto& reg = params::registry::global();
    assert_true(reg.all().size() >= 2);
    for (const params::param* p : reg.all()) {
        assert_true(p->name.starts_with("LOOM_"));
        assert_false(p->description.empty());
        assert_true(params::validate(*p, p->default_value).is_ok());
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

static void typed_handles_read_defaults_and_set_values(void**) {
    auto& reg = params::registry::global();
    assert_int_equal(test_params::count.get(), 7);
    assert_true(test_params::ratio.get() == 0.5);
    assert_string_equal(test_params::label.get().c_str(), "plain");
    assert_false(test_params::flag.get());
    assert_string_equal(test_params::mode.get().c_str(), "a");
    assert_false(test_params::count.is_set());
    assert_true(reg.set("LOOM_TEST_COUNT", "-12").is_ok());
    assert_true(reg.set("LOOM_TEST_RATIO", "2.25").is_ok());
    assert_true(reg.set("LOOM_TEST_LABEL", "x y").is_ok());
    assert_true(reg.set("LOOM_TEST_FLAG", "1").is_ok());
    assert_true(reg.set("LOOM_TEST_MODE", "b").is_ok());
    assert_int_equal(test_params::count.get(), -12);
    assert_true(test_params::count.is_set());
    assert_string_equal(test_params::count.text().c_str(), "-12");
    assert_true(test_params::ratio.get() == 2.25);
    assert_string_equal(test_params::label.get().c_str(), "x y");
    assert_true(test_params::flag.get());
    assert_string_equal(test_params::mode.get().c_str(), "b");
    assert_false(reg.set("LOOM_TEST_FLAG", "yes").is_ok());
    assert_false(reg.set("LOOM_TEST_COUNT", "12k").is_ok());
    assert_int_equal(test_params::count.get(), -12);
    assert_string_equal(test_params::count.name().data(), "LOOM_TEST_COUNT");
}

// Every component's declarations are registered once, under distinct names, and the
// variables loom sets for its children (loomrun, bootstrap) are among them.
static void the_catalog_declares_every_component_once(void**) {
    const auto& reg = params::registry::global();
    std::set<std::string_view> names;
    size_t own = 0;
    for (const params::component* c : comm::parameter_components()) {
        assert_false(c->name().empty());
        for (const params::handle* h : c->handles()) {
            assert_true(names.insert(h->name()).second);
            assert_ptr_equal(reg.find(h->name()), &h->declaration());
            own += h->declaration().is_foreign() ? 0 : 1;
        }
    }
    assert_true(own >= 55);
    // all() lists the catalog's LOOM_* parameters plus this test's own five.
    assert_int_equal(reg.all().size(), own + 5);
    for (const char* exported :
         {"LOOM_RANK", "LOOM_SIZE", "LOOM_JOB", "LOOM_BOOTSTRAP", "LOOM_TRANSPORT", "LOOM_TCP_ADDR",
          "LOOM_JOB_SECRET", "LOOM_FABRIC", "LOOM_LINK_STATS_DIR", "LOOM_PROGRESS", "LOOM_SWITCH",
          "LOOM_SWITCH_FABRIC", "LOOM_INC_TICKET"}) {
        assert_non_null(reg.find(exported));
    }
    assert_non_null(reg.find("OMPI_COMM_WORLD_RANK"));
    assert_true(reg.find("OMPI_COMM_WORLD_RANK")->is_foreign());
    assert_int_equal(bootstrap::params::ompi_rank.is_set(),
                     std::getenv("OMPI_COMM_WORLD_RANK") != nullptr);
}

// A handle registers itself with the component it names, in declaration order, so the
// component's list, the registry and the misspelling check all know it with no second list.
static void a_handle_is_listed_by_its_component(void**) {
    const auto& handles = test_params::component.handles();
    assert_int_equal(handles.size(), 5);
    assert_ptr_equal(handles[0], &test_params::count);
    assert_ptr_equal(handles[2], &test_params::label);
    assert_ptr_equal(handles[4], &test_params::mode);
    assert_ptr_equal(tuner::params::component.handles().front(), &tuner::params::port_model);
    assert_ptr_equal(params::registry::global().find("LOOM_TEST_MODE"),
                     &test_params::mode.declaration());
    assert_int_equal(setenv("LOOM_TEST_CUONT", "1", 1), 0);
    auto lines = params::registry::global().unknown_variables();
    unsetenv("LOOM_TEST_CUONT");
    assert_true(std::ranges::find(lines,
                                  "LOOM_TEST_CUONT is not a loom parameter; did you mean "
                                  "LOOM_TEST_COUNT?") != lines.end());
}

static void the_markdown_table_has_a_row_per_parameter(void**) {
    const auto& reg   = params::registry::global();
    std::string table = reg.markdown();
    assert_true(table.starts_with("| variable | default | unit | meaning |\n"));
    for (const params::param* p : reg.all()) {
        assert_non_null(std::strstr(table.c_str(), ("| `" + std::string(p->name) + "` |").c_str()));
    }
    // A choice's `|` would end its cell.
    assert_non_null(std::strstr(table.c_str(), "one of `per-edge\\|single-port`"));
    assert_null(std::strstr(table.c_str(), "OMPI_COMM_WORLD_RANK"));
}

static void a_misspelt_variable_names_the_closest_parameter(void**) {
    assert_int_equal(params::edit_distance("LOOM_SHM_SLOTBYTES", "LOOM_SHM_SLOT_BYTES"), 1);
    assert_int_equal(params::edit_distance("", "abc"), 3);
    assert_int_equal(params::edit_distance("kitten", "sitting"), 3);
    const auto& reg = params::registry::global();
    assert_int_equal(setenv("LOOM_SHM_SLOTBYTES", "1", 1), 0);
    assert_int_equal(setenv("LOOM_NO_SUCH_KNOB_AT_ALL", "1", 1), 0);
    auto lines = reg.unknown_variables();
    unsetenv("LOOM_SHM_SLOTBYTES");
    unsetenv("LOOM_NO_SUCH_KNOB_AT_ALL");
    assert_true(std::ranges::find(lines,
                                  "LOOM_SHM_SLOTBYTES is not a loom parameter; did you "
                                  "mean LOOM_SHM_SLOT_BYTES?") != lines.end());
    assert_true(std::ranges::any_of(lines, [](const std::string& line) {
        return line.starts_with(
            "LOOM_NO_SUCH_KNOB_AT_ALL is not a loom parameter; did you mean LOOM_");
    }));
    for (const std::string& line : lines) {
        // Declared names never warn (the test environment sets some).
        assert_null(std::strstr(line.c_str(), "LOOM_CALIBRATE "));
    }
}

// A component whose code starts after the registry's first use (a library loaded later)
// still gets the environment's value.
static void a_component_registered_late_reads_the_environment(void**) {
    assert_true(params::registry::global().load_status().is_ok());
    assert_int_equal(setenv("LOOM_TEST_LATE", "5", 1), 0);
    static params::component component{"late"};
    static const params::int_param late{component, "LOOM_TEST_LATE", "1", "", "registered late"};
    assert_int_equal(late.get(), 5);
    unsetenv("LOOM_TEST_LATE");
    assert_true(late.is_set());
    assert_non_null(params::registry::global().find("LOOM_TEST_LATE"));
}

LOOM_TEST_MAIN("base_status_params", cmocka_unit_test(every_status_has_a_distinct_string),
               cmocka_unit_test(status_to_string_names_class_and_message),
               cmocka_unit_test(dtype_sizes_match_the_types),
               cmocka_unit_test(registry_rejects_invalid_values_with_allowed_list),
               cmocka_unit_test(every_parameter_is_documented_and_its_default_valid),
               cmocka_unit_test(secrets_are_never_printed),
               cmocka_unit_test(typed_handles_read_defaults_and_set_values),
               cmocka_unit_test(the_catalog_declares_every_component_once),
               cmocka_unit_test(a_handle_is_listed_by_its_component),
               cmocka_unit_test(the_markdown_table_has_a_row_per_parameter),
               cmocka_unit_test(a_misspelt_variable_names_the_closest_parameter),
               cmocka_unit_test(a_component_registered_late_reads_the_environment))
