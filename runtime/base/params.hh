// SPDX-License-Identifier: Apache-2.0
// The one parameter registry (docs/architecture.md#rule-parameters). A component declares its
// settings in its
// `*_params.hh`, each once: a typed handle (name, type, default, unit, choices,
// description) that names its component and so registers itself there. Code reads the
// handles, so a misspelt name does not compile. The environment is read here and nowhere
// else, on the registry's first use; an invalid value is an error, never silently ignored.
//
//   // shm_params.hh
//   namespace loom::drivers::shm::params {
//   inline loom::params::component component{"shm"};
//   inline const loom::params::int_param slot_bytes{component, "LOOM_SHM_SLOT_BYTES", "4096",
//                                                   "bytes", "..."};
//   }
//   // shm_device.cc
//   int64_t slot = shm::params::slot_bytes.get();
//
// The declarations are inline variables: every file that includes the header defines them,
// in the header's order, before anything that file itself defines, so a handle is always
// constructed (and registered) before code that names it runs.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "status.hh"

namespace loom::params {

enum class type { integer, real, string, boolean, choice, choice_list };

/// Flags of a declaration.
enum flag : unsigned {
    none = 0,
    /// Its value is never printed (the job secret, in-network tickets).
    secret = 1u << 0,
    /// A variable another launcher sets (Open MPI, MPICH/Hydra, Slurm, PMIx) or the system's
    /// (TMPDIR, HOME, PATH): read here like a parameter, but not loom's setting, so all()
    /// does not list it and its value is checked by the code that reads it, not at load.
    foreign = 1u << 1,
};

struct param {
    std::string_view name;  // LOOM_*: the env variable and the config key (foreign: its own)
    type kind;
    std::string_view default_value;
    std::string_view unit;     // "s", "bytes", "" ...
    std::string_view choices;  // for type::choice and choice_list: "a|b|c"
    std::string_view description;
    unsigned flags = none;

    bool is_secret() const { return (flags & secret) != 0; }
    bool is_foreign() const { return (flags & foreign) != 0; }
    bool operator==(const param&) const = default;
};

class component;

/// A declared parameter. Constructing one registers it with its component and the
/// registry; it cannot be copied, as the registry keeps its address.
class handle {
  public:
    handle(component& owner, const param& declaration);
    handle(const handle&)            = delete;
    handle& operator=(const handle&) = delete;

    const param& declaration() const { return declaration_; }
    std::string_view name() const { return declaration_.name; }
    /// True when the value comes from the environment or set(), not from the default.
    bool is_set() const;
    /// The value as written (the default when not set).
    std::string text() const;

  private:
    param declaration_;
};

class int_param : public handle {
  public:
    int_param(component& owner, std::string_view name, std::string_view default_value,
              std::string_view unit, std::string_view description, unsigned flags = none)
        : handle(owner, param{name, type::integer, default_value, unit, "", description, flags}) {}
    /// The value; 0 for an unset foreign variable without a default.
    int64_t get() const;
};

class real_param : public handle {
  public:
    real_param(component& owner, std::string_view name, std::string_view default_value,
               std::string_view unit, std::string_view description)
        : handle(owner, param{name, type::real, default_value, unit, "", description}) {}
    double get() const;
};

class string_param : public handle {
  public:
    string_param(component& owner, std::string_view name, std::string_view default_value,
                 std::string_view description, unsigned flags = none)
        : handle(owner, param{name, type::string, default_value, "", "", description, flags}) {}
    std::string get() const { return text(); }
};

class bool_param : public handle {
  public:
    bool_param(component& owner, std::string_view name, std::string_view default_value,
               std::string_view description)
        : handle(owner, param{name, type::boolean, default_value, "", "", description}) {}
    /// True for 1 or true.
    bool get() const;
};

class choice_param : public handle {
  public:
    choice_param(component& owner, std::string_view name, std::string_view default_value,
                 std::string_view choices, std::string_view description)
        : handle(owner, param{name, type::choice, default_value, "", choices, description}) {}
    /// One of the declared choices.
    std::string get() const { return text(); }
};

class choice_list_param : public handle {
  public:
    choice_list_param(component& owner, std::string_view name, std::string_view default_value,
                      std::string_view choices, std::string_view description)
        : handle(owner, param{name, type::choice_list, default_value, "", choices, description}) {}
    /// A comma list of declared choices, each at least once ("a,c").
    std::string get() const { return text(); }
};

/// A component's declarations, in the order its handles were constructed (their order in
/// its header). The registry lists parameters by component name, then in that order.
class component {
  public:
    constexpr explicit component(std::string_view name) : name_(name) {}
    component(const component&)            = delete;
    component& operator=(const component&) = delete;

    std::string_view name() const { return name_; }
    const std::vector<const handle*>& handles() const { return handles_; }

  private:
    friend class handle;
    std::string_view name_;
    std::vector<const handle*> handles_;
};

/// True for the parameters that hold secrets (the job secret, in-network tickets): their
/// values are never printed by describe().
bool is_secret(std::string_view name);

class registry {
  public:
    /// The process-wide registry; handles register into it as they are constructed, and the
    /// environment is read on first use.
    static registry& global();

    /// Every registered LOOM_* parameter, by component name, then in declaration order.
    std::vector<const param*> all() const;
    /// The registered foreign variables, in the same order.
    std::vector<const param*> foreign() const;
    /// Finds a registered parameter or foreign variable by name.
    const param* find(std::string_view name) const;

    /// Validates and sets a value by name (from a tool flag or a config file).
    status set(std::string_view name, std::string_view value);
    /// The first invalid environment value seen, if any.
    status load_status() const;

    /// One line per parameter: name, value, default, unit, description; then the foreign
    /// variables that are set.
    std::string describe() const;
    /// The README's environment table: one markdown row per parameter.
    std::string markdown() const;
    /// One line per LOOM_* variable of the environment that no registered component
    /// declares, naming the closest declared one.
    std::vector<std::string> unknown_variables() const;

  private:
    friend class handle;
    struct entry {
        const param* declaration;
        std::string_view component;
        std::string value;
        bool set;
        bool loaded;  // value read from the environment (on first use, not at registration)
    };

    registry() = default;
    // Adds a declaration, its value still to be read.
    void add(const param& p, std::string_view component);
    // Index of `name` in entries_, -1 if unknown. Call with mutex_ held.
    long index_of(std::string_view name) const;
    // Takes mutex_ and reads the environment's value of every declaration not read yet: on
    // first use, as a program may setenv() before it creates its first communicator.
    std::unique_lock<std::mutex> loaded() const;
    // The value of `h` and whether it was set.
    std::pair<std::string, bool> read(const handle& h) const;
    // The declarations, foreign or not, by component name, then in declaration order.
    std::vector<const param*> declarations(bool foreign) const;

    mutable std::mutex mutex_;
    mutable std::vector<entry> entries_;  // by component name, then in declaration order
    mutable status load_status_;
};

/// Checks `value` against the declaration of `p`; the message says what is allowed.
status validate(const param& p, std::string_view value);

/// The edit distance between two names (insertions, deletions, substitutions).
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace loom::params
