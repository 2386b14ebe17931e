// SPDX-License-Identifier: Apache-2.0
#include "text_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loom {
namespace {

std::string named(std::string_view what, const std::string& path) {
    return std::string(what) + " '" + path + "'";
}

const char* file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) {
        return "a FIFO";
    }
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISCHR(mode) || S_ISBLK(mode)) {
        return "a device";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    return "not a regular file";
}

// Reads `fd` to its end into *out, refusing more than `max_bytes`. EAGAIN (an empty pipe
// opened non-blocking) cannot happen for regular files; streams are read blocking.
status read_all(int fd, const std::string& name, size_t max_bytes, std::string* out) {
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return system_error("cannot read " + name + ": " + std::strerror(errno));
        }
        if (n == 0) {
            return status::ok();
        }
        if (out->size() + static_cast<size_t>(n) > max_bytes) {
            return invalid_argument(name + " is larger than " + std::to_string(max_bytes) +
                                    " bytes, the limit for such a file");
        }
        out->append(buf, static_cast<size_t>(n));
    }
}

}  // namespace

result<std::string> read_text_file(const std::string& path, std::string_view what, size_t max_bytes,
                                   int* open_errno) {
    const std::string name = named(what, path);
    int fd                 = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (open_errno != nullptr) {
            *open_errno = e;
        }
        return system_error("cannot open " + name + ": " + std::strerror(e));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        return system_error("cannot stat " + name + ": " + std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return invalid_argument(name + " is " + file_kind(st.st_mode) +
                                ", not a regular file: give the path of a file");
    }
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
        ::close(fd);
        return invalid_argument(name + " is " + std::to_string(st.st_size) +
                                " bytes, larger than " + std::to_string(max_bytes) +
                                ", the limit for such a file");
    }
    std::string text;
    text.reserve(static_cast<size_t>(st.st_size));
    status s = read_all(fd, name, max_bytes, &text);
    ::close(fd);
    if (!s) {
        return s;
    }
    return text;
}

result<std::string> read_text_stream(int fd, std::string_view what, size_t max_bytes) {
    std::string text;
    if (status s = read_all(fd, std::string(what), max_bytes, &text); !s) {
        return s;
    }
    return text;
}

}  // namespace loom
