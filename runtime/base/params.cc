// SPDX-License-Identifier: Apache-2.0
#include "params.hh"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <type_traits>

extern char** environ;

namespace loom::params {
namespace {

// The one parser of integers and numbers: validation and get() read a value alike.
template <typename T>
bool parse(std::string_view v, T* out) {
    if (v.empty()) {
        return false;
    }
    std::string s(v);
    char* end = nullptr;
    if constexpr (std::is_same_v<T, double>) {
        *out = std::strtod(s.c_str(), &end);
    } else {
        *out = std::strtoll(s.c_str(), &end, 10);
    }
    return *end == '\0';
}

std::string quoted(const param& p, std::string_view value) {
    return std::string(p.name) + "='" + std::string(value) + "'";
}

// Whether `value` is one of `choices`, "a|b|c".
bool is_choice(std::string_view choices, std::string_view value) {
    for (size_t at = 0; at < choices.size();) {
        size_t end = std::min(choices.find('|', at), choices.size());
        if (choices.substr(at, end - at) == value) {
            return true;
        }
        at = end + 1;
    }
    return false;
}

// The first item of the comma list `value` that is not one of `choices` ("" for an empty
// item); nullopt when every item is one.
std::optional<std::string> first_not_a_choice(std::string_view choices, std::string_view value) {
    for (size_t at = 0; at <= value.size();) {
        size_t end            = std::min(value.find(',', at), value.size());
        std::string_view item = value.substr(at, end - at);
        if (!is_choice(choices, item)) {
            return std::string(item);
        }
        at = end + 1;
    }
    return std::nullopt;
}

// A markdown cell: `|` would end it, `<x>` would read as an HTML tag.
std::string cell(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '|') {
            out += "\\|";
        } else if (c == '<') {
            out += "&lt;";
        } else if (c == '>') {
            out += "&gt;";
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace

status validate(const param& p, std::string_view value) {
    int64_t integer = 0;
    double real     = 0;
    bool valid      = true;
    std::string why;
    switch (p.kind) {
        case type::integer:
            valid = parse(value, &integer);
            why   = " is not an integer";
            break;
        case type::real:
            valid = parse(value, &real);
            why   = " is not a number";
            break;
        case type::boolean:
            valid = value == "0" || value == "1" || value == "true" || value == "false";
            why   = " is not a boolean (0|1|true|false)";
            break;
        case type::choice:
            valid = is_choice(p.choices, value);
            why   = ": allowed values are " + std::string(p.choices);
            break;
        case type::choice_list:
            if (auto bad = first_not_a_choice(p.choices, value)) {
                valid = false;
                why   = ": '" + *bad + "' is not one of " + std::string(p.choices) +
                      " (a comma list of them)";
            }
            break;
        case type::string:
            break;
    }
    return valid ? status::ok() : invalid_argument(quoted(p, value) + why);
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0]          = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] =
                std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

bool handle::is_set() const {
    return registry::global().read(*this).second;
}

std::string handle::text() const {
    return registry::global().read(*this).first;
}

int64_t int_param::get() const {
    int64_t x = 0;
    return parse(text(), &x) ? x : 0;
}

double real_param::get() const {
    double x = 0;
    return parse(text(), &x) ? x : 0;
}

bool bool_param::get() const {
    auto v = text();
    return v == "1" || v == "true";
}

handle::handle(component& owner, const param& declaration) : declaration_(declaration) {
    registry::global().add(declaration_, owner.name());
    owner.handles_.push_back(this);
}

registry& registry::global() {
    static registry instance;
    return instance;
}

void registry::add(const param& p, std::string_view component) {
    std::lock_guard lock(mutex_);
    if (long i = index_of(p.name); i >= 0) {
        // A program that links a component twice (a static copy beside libloom's) registers
        // the same declaration twice: one parameter. Two different declarations are a bug.
        if (*entries_[static_cast<size_t>(i)].declaration != p && load_status_.is_ok()) {
            load_status_ = internal_error(std::string(p.name) + " is declared twice, differently");
        }
        return;
    }
    // Kept in listing order: by component name, then in declaration order.
    auto after =
        std::upper_bound(entries_.begin(), entries_.end(), component,
                         [](std::string_view c, const entry& e) { return c < e.component; });
    entries_.insert(after, entry{&p, component, std::string(p.default_value), false, false});
}

std::unique_lock<std::mutex> registry::loaded() const {
    std::unique_lock lock(mutex_);
    for (entry& e : entries_) {
        if (e.loaded) {
            continue;
        }
        e.loaded       = true;
        const param& p = *e.declaration;
        // The only getenv in loom (docs/architecture.md#rule-parameters).
        const char* env = std::getenv(std::string(p.name).c_str());
        if (env == nullptr) {
            continue;
        }
        if (!p.is_foreign()) {
            if (status st = validate(p, env); !st.is_ok()) {
                if (load_status_.is_ok()) {
                    load_status_ = st;
                }
                continue;
            }
        }
        e.value = env;
        e.set   = true;
    }
    return lock;
}

long registry::index_of(std::string_view name) const {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const entry& e) { return e.declaration->name == name; });
    return it == entries_.end() ? -1 : static_cast<long>(it - entries_.begin());
}

std::pair<std::string, bool> registry::read(const handle& h) const {
    auto lock      = loaded();
    const entry& e = entries_[static_cast<size_t>(index_of(h.name()))];
    return {e.value, e.set};
}

std::vector<const param*> registry::declarations(bool foreign) const {
    auto lock = loaded();
    std::vector<const param*> out;
    for (const entry& e : entries_) {
        if (e.declaration->is_foreign() == foreign) {
            out.push_back(e.declaration);
        }
    }
    return out;
}

std::vector<const param*> registry::all() const {
    return declarations(false);
}

std::vector<const param*> registry::foreign() const {
    return declarations(true);
}

const param* registry::find(std::string_view name) const {
    auto lock = loaded();
    long i    = index_of(name);
    return i < 0 ? nullptr : entries_[static_cast<size_t>(i)].declaration;
}

status registry::set(std::string_view name, std::string_view value) {
    auto lock = loaded();
    long i    = index_of(name);
    if (i < 0) {
        return invalid_argument("unknown parameter " + std::string(name));
    }
    entry& e = entries_[static_cast<size_t>(i)];
    if (status st = validate(*e.declaration, value); !st.is_ok()) {
        return st;
    }
    e.value = std::string(value);
    e.set   = true;
    return status::ok();
}

status registry::load_status() const {
    auto lock = loaded();
    return load_status_;
}

bool is_secret(std::string_view name) {
    const param* p = registry::global().find(name);
    return p != nullptr && p->is_secret();
}

std::string registry::describe() const {
    auto lock = loaded();
    std::ostringstream out;
    for (const entry& e : entries_) {
        const param& p = *e.declaration;
        if (p.is_foreign()) {
            continue;
        }
        // Secrets are never printed (a --config listing ends up in logs and bug reports).
        bool hidden = p.is_secret() && !e.value.empty();
        out << p.name << "=" << (hidden ? "(set, not shown)" : e.value) << "  (default "
            << p.default_value;
        if (!p.unit.empty()) {
            out << ", " << p.unit;
        }
        if (!p.choices.empty()) {
            out << (p.kind == type::choice_list ? ", a comma list of " : ", one of ") << p.choices;
        }
        out << ")  " << p.description << "\n";
    }
    // Foreign variables only when set: they are context (which launcher started us), not
    // settings, and a list of every launcher's unset variables would hide loom's own.
    for (const entry& e : entries_) {
        if (e.declaration->is_foreign() && e.set) {
            out << e.declaration->name << "=" << e.value << "  (read from the launcher)  "
                << e.declaration->description << "\n";
        }
    }
    return out.str();
}

std::string registry::markdown() const {
    std::ostringstream out;
    out << "| variable | default | unit | meaning |\n| --- | --- | --- | --- |\n";
    for (const param* declaration : all()) {
        const param& p = *declaration;
        out << "| `" << p.name << "` | "
            << (p.default_value.empty() ? "—" : "`" + std::string(p.default_value) + "`") << " | "
            << p.unit << " | ";
        if (!p.choices.empty()) {
            out << (p.kind == type::choice_list ? "a comma list of `" : "one of `")
                << cell(p.choices) << "`: ";
        }
        out << cell(p.description) << " |\n";
    }
    return out.str();
}

std::vector<std::string> registry::unknown_variables() const {
    auto lock = loaded();
    std::vector<std::string> out;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view var(*e);
        var = var.substr(0, var.find('='));
        if (!var.starts_with("LOOM_") || index_of(var) >= 0) {
            continue;
        }
        std::string_view closest;
        size_t best = SIZE_MAX;
        for (const entry& known : entries_) {
            size_t d = edit_distance(var, known.declaration->name);
            if (!known.declaration->is_foreign() && d < best) {
                best    = d;
                closest = known.declaration->name;
            }
        }
        std::string line = std::string(var) + " is not a loom parameter";
        if (!closest.empty()) {
            line += "; did you mean " + std::string(closest) + "?";
        }
        out.push_back(line);
    }
    return out;
}

}  // namespace loom::params
