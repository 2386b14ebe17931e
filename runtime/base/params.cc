#include "params.hh"

#include <cstdlib>
#include <sstream>

namespace loom::params {
namespace {

// The declarations. Keep this table the single source: the README's environment table
// and `--config` output are printed from it.
std::vector<param> declarations() {
    return {
        {"LOOM_LOG_LEVEL", type::choice, "warn", "", "error|warn|info|debug|trace",
         "how much loom logs to stderr"},
        {"LOOM_PORT_MODEL", type::choice, "per-edge", "", "per-edge|single-port",
         "cost-model port model: every rank pair has its own full-duplex link (per-edge, as "
         "the reference texts assume) or each rank has one full-duplex port into a switch"},
    };
}

bool parse_int(std::string_view v, int64_t* out) {
    if (v.empty()) {
        return false;
    }
    std::string s(v);
    char* end   = nullptr;
    long long x = std::strtoll(s.c_str(), &end, 10);
    if (*end != '\0') {
        return false;
    }
    *out = x;
    return true;
}

bool parse_real(std::string_view v, double* out) {
    if (v.empty()) {
        return false;
    }
    std::string s(v);
    char* end = nullptr;
    double x  = std::strtod(s.c_str(), &end);
    if (*end != '\0') {
        return false;
    }
    *out = x;
    return true;
}

}  // namespace

status validate(const param& p, std::string_view value) {
    switch (p.kind) {
        case type::integer: {
            int64_t x;
            if (!parse_int(value, &x)) {
                return invalid_argument(p.name + "='" + std::string(value) + "' is not an integer");
            }
            return status::ok();
        }
        case type::real: {
            double x;
            if (!parse_real(value, &x)) {
                return invalid_argument(p.name + "='" + std::string(value) + "' is not a number");
            }
            return status::ok();
        }
        case type::boolean:
            if (value == "0" || value == "1" || value == "true" || value == "false") {
                return status::ok();
            }
            return invalid_argument(p.name + "='" + std::string(value) +
                                    "' is not a boolean (0|1|true|false)");
        case type::choice: {
            std::stringstream ss(p.choices);
            std::string item;
            while (std::getline(ss, item, '|')) {
                if (item == value) {
                    return status::ok();
                }
            }
            return invalid_argument(p.name + "='" + std::string(value) + "': allowed values are " +
                                    p.choices);
        }
        case type::string:
            return status::ok();
    }
    return internal_error("unknown parameter type");
}

registry::registry() : params_(declarations()) {
    values_.reserve(params_.size());
    for (const auto& p : params_) {
        // The only getenv in loom (G8).
        const char* env   = std::getenv(p.name.c_str());
        std::string value = env ? env : p.default_value;
        if (env) {
            status st = validate(p, value);
            if (!st.is_ok() && load_status_.is_ok()) {
                load_status_ = st;
            }
            if (!st.is_ok()) {
                value = p.default_value;
            }
        }
        values_.push_back(value);
    }
}

registry& registry::global() {
    static registry instance;
    return instance;
}

const param* registry::find(std::string_view name) const {
    for (const auto& p : params_) {
        if (p.name == name) {
            return &p;
        }
    }
    return nullptr;
}

status registry::set(std::string_view name, std::string_view value) {
    for (size_t i = 0; i < params_.size(); ++i) {
        if (params_[i].name == name) {
            if (status st = validate(params_[i], value); !st.is_ok()) {
                return st;
            }
            values_[i] = std::string(value);
            return status::ok();
        }
    }
    return invalid_argument("unknown parameter " + std::string(name));
}

std::string registry::get_string(std::string_view name) const {
    for (size_t i = 0; i < params_.size(); ++i) {
        if (params_[i].name == name) {
            return values_[i];
        }
    }
    return {};
}

int64_t registry::get_int(std::string_view name) const {
    int64_t x = 0;
    parse_int(get_string(name), &x);
    return x;
}

double registry::get_real(std::string_view name) const {
    double x = 0;
    parse_real(get_string(name), &x);
    return x;
}

bool registry::get_bool(std::string_view name) const {
    auto v = get_string(name);
    return v == "1" || v == "true";
}

std::string registry::describe() const {
    std::ostringstream out;
    for (size_t i = 0; i < params_.size(); ++i) {
        const auto& p = params_[i];
        out << p.name << "=" << values_[i] << "  (default " << p.default_value;
        if (!p.unit.empty()) {
            out << ", " << p.unit;
        }
        if (!p.choices.empty()) {
            out << ", one of " << p.choices;
        }
        out << ")  " << p.description << "\n";
    }
    return out.str();
}

}  // namespace loom::params
