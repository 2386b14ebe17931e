// SPDX-License-Identifier: Apache-2.0
// A tiny file-based kv_store for driver tests: a directory of files, one per key, published
// by an atomic link() (so a reader sees a whole value or nothing, and a key is set once),
// read by polling until a deadline. Processes forked by a test share it through the
// directory. The production file store is runtime/bootstrap's; this one keeps driver tests
// independent of the bootstrap code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/kv_store.hh"

namespace loom::test {

class file_store final : public kv_store {
  public:
    explicit file_store(std::string dir) : dir_(std::move(dir)) {}
    status set(std::string_view key, std::string_view value) override;
    result<std::string> get(std::string_view key, double timeout_s) override;
    status wait(const std::vector<std::string>& keys, double timeout_s) override;

    /// Makes a fresh directory under /tmp (mkdtemp) for one test.
    static std::string make_dir(const char* label);
    /// Removes the directory and its files.
    static void remove_dir(const std::string& dir);

  private:
    std::string path_of(std::string_view key) const;
    std::string dir_;
};

}  // namespace loom::test
