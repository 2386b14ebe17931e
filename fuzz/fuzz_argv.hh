// SPDX-License-Identifier: Apache-2.0
// Turns fuzz input into a command line: arguments are separated by NUL or newline bytes,
// argv[0] is the tool's name. Bounded, so one input cannot ask for a huge argv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom::fuzz {

struct fuzz_argv {
    std::vector<std::string> words;
    std::vector<char*> argv;  // points into words; argv[argc] is nullptr, as main's

    fuzz_argv(const char* program, const uint8_t* data, size_t size) {
        constexpr size_t max_args = 64;
        words.emplace_back(program);
        std::string word;
        for (size_t i = 0; i < size && words.size() < max_args; ++i) {
            char c = static_cast<char>(data[i]);
            if (c == '\0' || c == '\n') {
                words.push_back(word);
                word.clear();
            } else {
                word += c;
            }
        }
        if (!word.empty() && words.size() < max_args) {
            words.push_back(word);
        }
        for (std::string& w : words) {
            argv.push_back(w.data());
        }
        argv.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(words.size()); }
};

}  // namespace loom::fuzz
