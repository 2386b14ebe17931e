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
    std::string name;  // LOOM_*: the env variable and the config key (foreign: its own name)
    type kind;
    std::string default_value;
    std::string unit;     // "s", "bytes", "" ...
    std::string choices;  // for type::choice: "a|b|c"
    std::string description;
};

/// True for the parameters that hold secrets (the job secret, in-network tickets): their
/// values are never printed by describe().
bool is_secret(std::string_view name);

class registry {
  public:
    /// The process-wide registry, loaded from the environment on first use.
    static registry& global();

    const std::vector<param>& all() const { return params_; }
    /// Variables other launchers set (Open MPI, MPICH/Hydra, Slurm, PMIx) that loom reads to
    /// learn its rank, size and job: declared and read here like parameters (this is still
    /// the only getenv), but they are not loom's settings, so all() does not list them and
    /// an invalid value is checked by the code that reads it (bootstrap), not at load.
    const std::vector<param>& foreign() const { return foreign_; }
    /// Finds a LOOM_* parameter or a foreign variable by name.
    const param* find(std::string_view name) const;
    /// True when `name` has a value from the environment or set(), not just its default.
    bool is_set(std::string_view name) const;

    /// Validates and sets a value (from a tool flag or a config file).
    status set(std::string_view name, std::string_view value);
    /// The first invalid environment value seen at load, if any.
    const status& load_status() const { return load_status_; }

    std::string get_string(std::string_view name) const;
    int64_t get_int(std::string_view name) const;
    double get_real(std::string_view name) const;
    bool get_bool(std::string_view name) const;

    /// One line per parameter: name, value, default, unit, description; then the foreign
    /// variables that are set.
    std::string describe() const;

  private:
    registry();
    // Index into values_/set_ (parameters first, then foreign variables); -1 if unknown.
    long index_of(std::string_view name) const;
    const param& declaration(size_t index) const;

    std::vector<param> params_;
    std::vector<param> foreign_;
    std::vector<std::string> values_;
    std::vector<bool> set_;
    status load_status_;
};

/// Checks `value` against the declaration of `p`; the message says what is allowed.
status validate(const param& p, std::string_view value);

}  // namespace loom::params
