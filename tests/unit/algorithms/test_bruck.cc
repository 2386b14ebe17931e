// (suite under construction)
#include "test_main.hh"

static void test_placeholder(void**) { skip(); }

int main() {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_placeholder)};
    return LOOM_RUN_TESTS("bruck", tests);
}
