// The wrappers' wakers (drivers/waker.hh) with real processes: fault:shm and fwd:shm offer
// the waker of the endpoint they wrap, so a rank sleeping on them is woken by its peer's
// send within milliseconds (wake_test_util.hh). A fault wrapper that holds a delayed
// message shortens its own sleep: nothing would ring it when the message falls due.
#include <string>

#include "base/params.hh"
#include "driver_test_util.hh"
#include "test_main.hh"
#include "wake_test_util.hh"

using namespace loom;

namespace {

// Both ranks keep polling until the other is done: a fwd rank forwards only while polled.
int wake_rank(const std::string& driver, bool sender_sleeps, int rank, const std::string& job,
              const std::string& dir) {
    test::file_store store(dir);
    auto ep = test::open_named(driver, "ring:2", rank, 2, job, &store);
    RANK_CHECK(rank, ep.is_ok(), "%s", ep.error().to_string().c_str());
    if (int rc = test::wake::eager_rounds(**ep, driver, rank, sender_sleeps); rc != 0) {
        return rc;
    }
    RANK_CHECK(rank, store.set("done" + std::to_string(rank), "1").is_ok(), "store");
    deadline until(30);
    while (!store.get("done" + std::to_string(1 - rank), 0).is_ok() && !until.expired()) {
        test::poll_for((*ep)->fast(), 0.002, [](const drivers::completion&) {});
    }
    return 0;
}

void run(const char* driver, bool sender_sleeps = false) {
    test::store_dir dir("wrapwake");
    std::string job      = test::unique_job("wrapwake");
    std::string d        = driver;
    std::string problems = test::run_ranks(
        2, 60, [&](int rank) { return wake_rank(d, sender_sleeps, rank, job, dir.path); });
    if (!problems.empty()) {
        LOOM_FAIL(problems);
    }
}

void fault_shm_send_wakes_the_sleeper(void**) {
    run("fault:shm");
}

void fwd_shm_send_wakes_the_sleeper(void**) {
    run("fwd:shm");
}

// The sender sleeps too: its message, delayed 20 ms in the wrapper, is posted by the poll
// that follows the shortened sleep, well before the 5 s timeout.
void fault_delay_shortens_the_sleep(void**) {
    auto& reg = params::registry::global();
    assert_true(reg.set("LOOM_FAULT_DELAY_US", "20000").is_ok());
    run("fault:shm", true);
    assert_true(reg.set("LOOM_FAULT_DELAY_US", "0").is_ok());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fault_shm_send_wakes_the_sleeper),
        cmocka_unit_test(fwd_shm_send_wakes_the_sleeper),
        cmocka_unit_test(fault_delay_shortens_the_sleep),
    };
    return LOOM_RUN_TESTS("drivers_wrapper_wake", tests);
}
