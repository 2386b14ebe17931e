// SPDX-License-Identifier: Apache-2.0
// What a loom_comm_t points to, and the guards every entry point of the C API shares.
#pragma once

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "comm/comm.hh"

struct loom_comm_s {
    std::unique_ptr<loom::comm::communicator> impl;
};

namespace loom::comm {

/// Records "what: name is NULL" for loom_last_error; LOOM_ERR_INVALID_ARGUMENT.
loom_status_t null_argument(const char* what, const char* name);

/// Runs `body`, turning an escaping exception into a status (and a recorded error): no
/// exception crosses the C ABI (docs/architecture.md#conventions).
template <class F>
loom_status_t guarded(const char* what, F&& body) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return record_error(status(LOOM_ERR_NO_RESOURCE, std::string(what) + ": out of memory"), -1,
                            what);
    } catch (const std::exception& e) {
        return record_error(internal_error(std::string(what) + ": " + e.what()), -1, what);
    }
}

/// The integer a C caller passed for an enum parameter, read from its bytes: C may pass any
/// int, and loading an out-of-range value as a C++ enum is undefined behaviour.
template <class Enum>
int raw(const Enum& e) {
    static_assert(sizeof(Enum) == sizeof(int));
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

}  // namespace loom::comm
