// The one parameter registry (STYLE.md G8). Every setting loom reads is declared once in
// params.cc with its name, type, default, unit and description; the environment is read
// here and nowhere else; an invalid value is an error, never silently ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "status.hh"

namespace loom::params {

enum class type { integer, real, string, boolean, choice };

struct param {
    std::string name;  // LOOM_*: the env variable and the config key
    type kind;
    std::string default_value;
    std::string unit;     // "s", "bytes", "" ...
    std::string choices;  // for type::choice: "a|b|c"
    std::string description;
};

class registry {
  public:
    /// The process-wide registry, loaded from the environment on first use.
    static registry& global();

    const std::vector<param>& all() const { return params_; }
    const param* find(std::string_view name) const;

    /// Validates and sets a value (from a tool flag or a config file).
    status set(std::string_view name, std::string_view value);
    /// The first invalid environment value seen at load, if any.
    const status& load_status() const { return load_status_; }

    std::string get_string(std::string_view name) const;
    int64_t get_int(std::string_view name) const;
    double get_real(std::string_view name) const;
    bool get_bool(std::string_view name) const;

    /// One line per parameter: name, value, default, unit, description.
    std::string describe() const;

  private:
    registry();
    std::vector<param> params_;
    std::vector<std::string> values_;
    status load_status_;
};

/// Checks `value` against the declaration of `p`; the message says what is allowed.
status validate(const param& p, std::string_view value);

}  // namespace loom::params
