// SPDX-License-Identifier: Apache-2.0
// A pause for tests that must let time pass: a rank that stays silent, peers that settle, a
// poll loop that waits for another process.
#pragma once

#include <time.h>

namespace loom::test {

inline void sleep_s(double s) {
    timespec ts{static_cast<time_t>(s), static_cast<long>((s - static_cast<time_t>(s)) * 1e9)};
    nanosleep(&ts, nullptr);
}

}  // namespace loom::test
