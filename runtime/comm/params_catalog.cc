// SPDX-License-Identifier: Apache-2.0
#include "comm/params_catalog.hh"

#include <mutex>
#include <vector>

#include "base/log.hh"
#include "base/log_params.hh"
#include "bootstrap/bootstrap_params.hh"
#include "bootstrap/controller_params.hh"
#include "comm/comm_params.hh"
#include "drivers/driver_params.hh"
#include "inc/inc_params.hh"
#include "routing/routing_params.hh"
#include "tuner/tuner_params.hh"

namespace loom::comm {

std::span<const loom::params::component* const> parameter_components() {
    static const std::vector<const loom::params::component*> list = [] {
        std::vector<const loom::params::component*> all = {
            &log::params::component,
            &routing::params::component,
            &tuner::params::component,
            &inc::params::component,
            &bootstrap::params::component,
            &comm::params::component,
            &bootstrap::controller_params::component,
        };
        auto of_drivers = drivers::parameter_components();
        all.insert(all.end(), of_drivers.begin(), of_drivers.end());
        return all;
    }();
    return list;
}

void warn_unknown_variables() {
    static std::once_flag once;
    std::call_once(once, [] {
        (void)parameter_components();
        for (const std::string& line : loom::params::registry::global().unknown_variables()) {
            LOOM_LOG_WARN(log::subsystem::init, "%s", line.c_str());
        }
    });
}

}  // namespace loom::comm
