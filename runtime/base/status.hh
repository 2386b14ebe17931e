// SPDX-License-Identifier: Apache-2.0
// loom::status and loom::result<T>: the one error model inside loom
// (docs/architecture.md#rule-errors).
//
// A status is a class (the C ABI's loom_status_t) plus a one-line message that names what
// failed: rank, peer, step, element, option. Fallible functions return [[nodiscard]]
// status or result<T>; exceptions never cross the ABI or run on a hot path.
#pragma once

#include <loom/loom.h>

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace loom {

class [[nodiscard]] status {
  public:
    status() = default;
    status(loom_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

    static status ok() { return {}; }

    bool is_ok() const { return code_ == LOOM_SUCCESS; }
    explicit operator bool() const { return is_ok(); }
    loom_status_t code() const { return code_; }
    const std::string& message() const { return message_; }

    /// "invalid argument: <message>", for logs and one-line tool errors.
    std::string to_string() const;

    /// Prepends context ("verify: ") to the message; keeps the class.
    status& prefix(const std::string& context) {
        message_ = context + message_;
        return *this;
    }

  private:
    loom_status_t code_ = LOOM_SUCCESS;
    std::string message_;
};

// Shorthands for the classes, so call sites read as the error they raise.
inline status invalid_argument(std::string m) {
    return {LOOM_ERR_INVALID_ARGUMENT, std::move(m)};
}
inline status not_applicable(std::string m) {
    return {LOOM_ERR_NOT_APPLICABLE, std::move(m)};
}
inline status parse_error(std::string m) {
    return {LOOM_ERR_PARSE, std::move(m)};
}
inline status verify_error(std::string m) {
    return {LOOM_ERR_VERIFY, std::move(m)};
}
inline status internal_error(std::string m) {
    return {LOOM_ERR_INTERNAL, std::move(m)};
}
inline status not_supported(std::string m) {
    return {LOOM_ERR_NOT_SUPPORTED, std::move(m)};
}
inline status system_error(std::string m) {
    return {LOOM_ERR_SYSTEM, std::move(m)};
}

template <class T>
class [[nodiscard]] result {
  public:
    result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
    result(status error) : status_(std::move(error)) { assert(!status_.is_ok()); }

    bool is_ok() const { return status_.is_ok(); }
    explicit operator bool() const { return is_ok(); }
    const status& error() const { return status_; }

    T& value() & {
        assert(is_ok());
        return *value_;
    }
    const T& value() const& {
        assert(is_ok());
        return *value_;
    }
    T&& value() && {
        assert(is_ok());
        return std::move(*value_);
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

  private:
    status status_;
    std::optional<T> value_;
};

}  // namespace loom
