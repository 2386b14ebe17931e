// SPDX-License-Identifier: Apache-2.0
// "[rank] " before every line a rank writes. Whole lines go out in one write(2), so lines of
// different ranks never interleave mid-line on loomrun's stdout or stderr.
#include <errno.h>
#include <unistd.h>

#include "loomrun.hh"

namespace loom::loomrun {
namespace {

// A program that writes megabytes without a newline still gets its output through, in
// pieces of this size, rather than loomrun holding it all.
constexpr size_t max_partial_bytes = 64 * 1024;

void write_all(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;  // the reader went away (| head): the ranks' output is dropped, not fatal
        }
        done += static_cast<size_t>(n);
    }
}

}  // namespace

line_prefixer::line_prefixer(int rank, int fd, bool tag)
    : prefix_(tag ? "[" + std::to_string(rank) + "] " : ""), fd_(fd) {}

void line_prefixer::feed(const char* data, size_t len) {
    partial_.append(data, len);
    size_t start = 0;
    std::string out;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
        out += prefix_;
        out.append(partial_, start, nl + 1 - start);
    }
    partial_.erase(0, start);
    if (partial_.size() >= max_partial_bytes) {
        out += prefix_ + partial_ + "\n";
        partial_.clear();
    }
    write_all(fd_, out);
}

void line_prefixer::finish() {
    if (!partial_.empty()) {
        write_all(fd_, prefix_ + partial_ + "\n");
        partial_.clear();
    }
}

}  // namespace loom::loomrun
