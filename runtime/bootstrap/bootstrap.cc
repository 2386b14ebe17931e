// SPDX-License-Identifier: Apache-2.0
// connect_store(): address → store, plus what the stores share (address parsing, the
// in-process store of a one-rank job).
#include "bootstrap/bootstrap.hh"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "base/check.hh"
#include "base/clock.hh"
#include "bootstrap/store_internal.hh"

namespace loom::bootstrap {
namespace detail {

result<host_port> parse_host_port(std::string_view text) {
    host_port where;
    if (const char* why = net::parse_host_port(text, &where); why != nullptr) {
        return invalid_argument("bootstrap address '" + std::string(text) + "' " + why +
                                " (expected host:port or file:DIR)");
    }
    return where;
}

status validate_address(std::string_view address) {
    if (address.starts_with("file:")) {
        if (address.size() == 5) {
            return invalid_argument("bootstrap address 'file:' names no directory");
        }
        return status::ok();
    }
    auto hp = parse_host_port(address);
    return hp ? status::ok() : hp.error();
}

namespace {

// A job of one rank still runs code that publishes and reads keys (drivers do), so it gets
// a real store; another thread of the process may set what this one waits for.
class memory_store final : public kv_store {
  public:
    status set(std::string_view key, std::string_view value) override {
        std::lock_guard lock(mu_);
        if (!kv_.emplace(std::string(key), std::string(value)).second) {
            return invalid_argument("bootstrap: key '" + std::string(key) + "' is already set");
        }
        cv_.notify_all();
        return status::ok();
    }

    result<std::string> get(std::string_view key, double timeout_s) override {
        std::unique_lock lock(mu_);
        std::string k(key);
        if (!wait_until(lock, k, until(timeout_s))) {
            return timeout_error("bootstrap: timed out after " + seconds_text(timeout_s) +
                                 " waiting for key '" + k + "' (in-process store, 1 rank)");
        }
        return kv_.at(k);
    }

    status wait(const std::vector<std::string>& keys, double timeout_s) override {
        std::unique_lock lock(mu_);
        auto end = until(timeout_s);  // one deadline for all the keys
        for (const auto& k : keys) {
            if (!wait_until(lock, k, end)) {
                return timeout_error("bootstrap: timed out after " + seconds_text(timeout_s) +
                                     " waiting for key '" + k + "' (in-process store, 1 rank)");
            }
        }
        return status::ok();
    }

  private:
    using time_point = std::chrono::steady_clock::time_point;

    static time_point until(double timeout_s) {
        return std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(std::max(0.0, timeout_s)));
    }

    bool wait_until(std::unique_lock<std::mutex>& lock, const std::string& key, time_point end) {
        return cv_.wait_until(lock, end, [&] { return kv_.count(key) != 0; });
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, std::string, std::less<>> kv_;
};

}  // namespace

std::unique_ptr<kv_store> open_memory_store() {
    return std::make_unique<memory_store>();
}

}  // namespace detail

result<std::unique_ptr<kv_store>> connect_store(const std::string& address, const identity& me,
                                                double timeout_s) {
    if (me.size < 1 || me.rank < 0 || me.rank >= me.size) {
        return invalid_argument("bootstrap: rank " + std::to_string(me.rank) +
                                " is not in a job of " + std::to_string(me.size) + " ranks");
    }
    if (!(timeout_s > 0)) {
        return invalid_argument("bootstrap: the timeout must be positive, not " +
                                std::to_string(timeout_s) + " s");
    }
    if (address.empty()) {
        if (me.size != 1) {
            return invalid_argument("bootstrap: rank " + std::to_string(me.rank) + " of " +
                                    std::to_string(me.size) +
                                    " has no rendezvous address (set LOOM_BOOTSTRAP)");
        }
        return detail::open_memory_store();
    }
    if (address.starts_with("file:")) {
        LOOM_CHECK(detail::validate_address(address));
        return detail::open_file_store(address.substr(5), me, timeout_s);
    }
    LOOM_ASSIGN(auto where, detail::parse_host_port(address));
    return detail::open_tcp_store(where, me, timeout_s);
}

result<std::unique_ptr<kv_store>> connect_store(const identity& me) {
    return connect_store(me.bootstrap, me, me.timeout_s);
}

}  // namespace loom::bootstrap
