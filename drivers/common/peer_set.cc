// SPDX-License-Identifier: Apache-2.0
#include "drivers/common/peer_set.hh"

#include <algorithm>
#include <string>

namespace loom::drivers::common {

result<std::vector<int>> peer_set(const endpoint_config& config, std::string_view driver) {
    const auto& listed = config.peers;
    for (int r : listed) {
        if (r < 0 || r >= config.size || r == config.rank) {
            return invalid_argument(std::string(driver) + ": rank " + std::to_string(config.rank) +
                                    ": peer " + std::to_string(r) + " is not another rank of 0.." +
                                    std::to_string(config.size - 1));
        }
    }
    std::vector<int> ranks;
    for (int r = 0; r < config.size; ++r) {
        if (r != config.rank &&
            (listed.empty() || std::find(listed.begin(), listed.end(), r) != listed.end())) {
            ranks.push_back(r);
        }
    }
    return ranks;
}

}  // namespace loom::drivers::common
