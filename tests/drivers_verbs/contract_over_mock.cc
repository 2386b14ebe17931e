// SPDX-License-Identifier: Apache-2.0
// Runs the endpoint contract (tests/drivers/test_driver_contract.cc) over the verbs driver
// on the simulated HCA: before main, the driver's call table becomes the mock's, and ranks
// become threads (the simulated HCA lives in this process). The contract opens "verbs" by
// its registry name like any other transport.
#include "../drivers/driver_test_util.hh"
#include "drivers/verbs/verbs_api.hh"
#include "mock_verbs.hh"

namespace {

struct over_mock {
    over_mock() {
        loom::drivers::verbs::install_verbs_api(&loom::test::mock_verbs::reset());
        loom::test::ranks_as_threads = true;
    }
} installed;

}  // namespace
