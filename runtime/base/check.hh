// SPDX-License-Identifier: Apache-2.0
// LOOM_CHECK: propagate a failed status, leaving a breadcrumb in the debug log
// (docs/architecture.md#rule-errors).
#pragma once

#include "log.hh"
#include "status.hh"

#define LOOM_CHECK(expr)                                                                        \
    do {                                                                                        \
        ::loom::status loom_check_status_ = (expr);                                             \
        if (!loom_check_status_.is_ok()) {                                                      \
            LOOM_LOG_DEBUG(::loom::log::subsystem::init, "%s:%d: %s <- %s", __FILE__, __LINE__, \
                           loom_check_status_.to_string().c_str(), #expr);                      \
            return loom_check_status_;                                                          \
        }                                                                                       \
    } while (0)

// Unwraps a result<T> into `lhs`, or returns its error.
#define LOOM_ASSIGN(lhs, expr)                          \
    auto&& LOOM_CONCAT_(loom_r_, __LINE__) = (expr);    \
    if (!LOOM_CONCAT_(loom_r_, __LINE__).is_ok()) {     \
        return LOOM_CONCAT_(loom_r_, __LINE__).error(); \
    }                                                   \
    lhs = std::move(LOOM_CONCAT_(loom_r_, __LINE__)).value()

#define LOOM_CONCAT_INNER_(a, b) a##b
#define LOOM_CONCAT_(a, b) LOOM_CONCAT_INNER_(a, b)
