// SPDX-License-Identifier: Apache-2.0
// Internal to runtime/bootstrap: what the stores and discover() share. Not installed.
//
// Every store answers get/wait within the caller's deadline and names the key it waited for
// in the timeout message; rank and job come from the identity the store was opened with.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/kv_store.hh"
#include "base/net.hh"
#include "base/status.hh"
#include "bootstrap/bootstrap.hh"

namespace loom::bootstrap::detail {

using net::address_text;
using net::backoff;
using net::host_port;
using net::seconds_text;

/// "host:port" or "[v6addr]:port"; the message names the text and what is expected.
result<host_port> parse_host_port(std::string_view text);

/// Checks an address as connect_store() accepts it ("host:port" or "file:DIR").
status validate_address(std::string_view address);

/// Rank 0 listens on `where` and serves; the others connect until `timeout_s` passes.
result<std::unique_ptr<kv_store>> open_tcp_store(const host_port& where, const identity& me,
                                                 double timeout_s);
/// A directory of files, one per key, published by an exclusive atomic rename.
result<std::unique_ptr<kv_store>> open_file_store(const std::string& dir, const identity& me,
                                                  double timeout_s);
/// Removes `parent`'s rendezvous directories of this user ("loom-bootstrap-<uid>-*", other than
/// `keep`) that a killed launch left: every file's writer is gone, or empty for a minute.
/// Returns how many it removed.
int remove_stale_rendezvous(const std::string& parent, const std::string& keep);
/// bootstrap::remove_job_rendezvous.
int remove_job_rendezvous(const std::string& dir, const std::string& job);
/// An in-process map, for a job of one rank.
std::unique_ptr<kv_store> open_memory_store();

/// The start time of process `pid` (field 22 of /proc/<pid>/stat), "" when there is none:
/// with the pid it names a process uniquely, even after the pid is reused.
std::string process_start_time(pid_t pid);

/// A LOOM_ERR_TIMEOUT status.
inline status timeout_error(std::string message) {
    return {LOOM_ERR_TIMEOUT, std::move(message)};
}

/// The ranks in [first, size) for which `registered(rank)` is false, as "2,5,7" ("none" if
/// all registered).
template <class Pred>
std::string missing_ranks(int first, int size, Pred registered) {
    std::string out;
    for (int r = first; r < size; ++r) {
        if (!registered(r)) {
            out += (out.empty() ? "" : ",") + std::to_string(r);
        }
    }
    return out.empty() ? "none" : out;
}

}  // namespace loom::bootstrap::detail
