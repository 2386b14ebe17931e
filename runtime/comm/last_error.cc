// SPDX-License-Identifier: Apache-2.0
// The calling thread's last error (loom_last_error): errno-like, one per thread, so threads
// driving different communicators never see each other's failures.
#include <string>

#include "comm/comm.hh"

namespace loom::comm {
namespace {

struct last_error {
    loom_status_t code = LOOM_SUCCESS;
    int rank = -1, peer = -1, step = -1;
    uint32_t seq = 0;
    std::string collective;
    std::string message;
};

last_error& current() {
    thread_local last_error e;
    return e;
}

}  // namespace

loom_status_t record_error(const status& st, int rank, const char* collective) {
    last_error& e = current();
    e.code        = st.code();
    e.rank        = rank;
    e.peer        = -1;
    e.step        = -1;
    e.seq         = 0;
    e.collective  = collective ? collective : "";
    e.message     = st.to_string();
    return st.code();
}

loom_status_t record_failure(const engine::failure& f, const char* collective) {
    last_error& e = current();
    e.code        = f.code;
    e.rank        = f.rank;
    e.peer        = f.peer;
    e.step        = f.step;
    e.seq         = f.seq;
    e.collective  = collective ? collective : f.collective;
    e.message     = f.message;
    // The engine names the schedule's primitive; the API call may differ (barrier runs an
    // allreduce, send/recv a sendrecv), so say which call it was when the names differ.
    if (collective && f.collective != collective) {
        e.message = std::string(collective) + " (runs " + f.collective + "): " + f.message;
    }
    if (f.message.empty()) {
        e.message = std::string(loom_status_string(f.code)) + ": " + e.collective + " #" +
                    std::to_string(f.seq) + " on rank " + std::to_string(f.rank) + ", peer " +
                    std::to_string(f.peer) + ", step " + std::to_string(f.step);
    }
    return f.code;
}

}  // namespace loom::comm

extern "C" loom_status_t loom_last_error(loom_error_info_t* out) {
    const auto& e = loom::comm::current();
    if (!out) {
        return e.code;
    }
    size_t n = out->struct_size;
    // Fill only the fields the caller's struct has (ABI versioning, loom.h).
    auto fits = [n](size_t offset, size_t size) { return n >= offset + size; };
    if (fits(offsetof(loom_error_info_t, status), sizeof out->status)) {
        out->status = e.code;
    }
    if (fits(offsetof(loom_error_info_t, rank), sizeof out->rank)) {
        out->rank = e.rank;
    }
    if (fits(offsetof(loom_error_info_t, peer), sizeof out->peer)) {
        out->peer = e.peer;
    }
    if (fits(offsetof(loom_error_info_t, collective), sizeof out->collective)) {
        out->collective = e.collective.c_str();
    }
    if (fits(offsetof(loom_error_info_t, seq), sizeof out->seq)) {
        out->seq = e.seq;
    }
    if (fits(offsetof(loom_error_info_t, step), sizeof out->step)) {
        out->step = e.step;
    }
    if (fits(offsetof(loom_error_info_t, message), sizeof out->message)) {
        out->message = e.message.c_str();
    }
    return e.code;
}

extern "C" const char* loom_last_error_message(void) {
    return loom::comm::current().message.c_str();
}
