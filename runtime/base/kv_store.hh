// SPDX-License-Identifier: Apache-2.0
// The key/value exchange every control path uses to publish and learn addresses, as Gloo's
// Store does. Declared here, in base, so drivers can use it without depending on
// runtime/bootstrap, which implements it (TCP rendezvous, file store).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "status.hh"

namespace loom {

class kv_store {
  public:
    virtual ~kv_store() = default;
    /// Publishes `value` under `key` (a key is written once; a second set is an error).
    virtual status set(std::string_view key, std::string_view value) = 0;
    /// Waits up to `timeout_s` for `key` and returns its value; LOOM_ERR_TIMEOUT names the key.
    virtual result<std::string> get(std::string_view key, double timeout_s) = 0;
    /// Waits up to `timeout_s` until every key exists.
    virtual status wait(const std::vector<std::string>& keys, double timeout_s) = 0;
};

}  // namespace loom
