// SPDX-License-Identifier: Apache-2.0
// Reading a token file (secret_file.hh).
#include "secret_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string_view>

#include "base/net.hh"

namespace loom::tools {

result<std::string> read_token_file(const std::string& path, const std::string& flag) {
    std::string where = flag + " " + path;
    // O_NONBLOCK: a FIFO is refused below instead of waiting for a writer.
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return invalid_argument(where + ": " + net::errno_text(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return system_error(where + ": " + net::errno_text(err));
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        ::close(fd);
        char mode[8];
        std::snprintf(mode, sizeof mode, "%03o", unsigned(st.st_mode & 0777));
        return invalid_argument(where + " must be a regular file of this user that only its " +
                                "owner can read (mode " + mode + "): chmod 600 " + path);
    }
    char buf[max_token_bytes + 2];
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n < 0) {
        return system_error(where + ": " + net::errno_text(errno));
    }
    std::string_view text(buf, size_t(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                             text.back() == '\t')) {
        text.remove_suffix(1);
    }
    if (text.size() > max_token_bytes || text.find('\n') != std::string_view::npos) {
        return invalid_argument(where + ": the token must be one line of at most " +
                                std::to_string(max_token_bytes) + " bytes");
    }
    if (text.size() < min_token_bytes) {
        return invalid_argument(
            where + ": the token must have at least " + std::to_string(min_token_bytes) +
            " characters (e.g. head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')");
    }
    return std::string(text);
}

}  // namespace loom::tools
