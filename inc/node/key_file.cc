// SPDX-License-Identifier: Apache-2.0
// The node key file (key_file.hh).
#include "inc/node/key_file.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/net.hh"
#include "base/secret.hh"
#include "inc/node/ticket.hh"

namespace loom::inc {
namespace {

status create_key(const std::string& path) {
    auto hex = random_secret_hex();
    if (!hex) {
        return hex.error();
    }
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return system_error("--key-file " + path + ": cannot create: " + net::errno_text(errno));
    }
    std::string text = *hex + "\n";
    bool ok          = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
    ok               = ::close(fd) == 0 && ok;
    return ok ? status::ok()
              : system_error("--key-file " + path + ": cannot write: " + net::errno_text(errno));
}

}  // namespace

result<std::string> load_node_key(const std::string& path, bool create) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
        if (status st = create_key(path); !st) {
            return st;
        }
        fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
        return system_error("--key-file " + path + ": " + net::errno_text(errno));
    }
    struct stat st {};
    char buf[256];
    ssize_t n = ::fstat(fd, &st) == 0 ? ::read(fd, buf, sizeof buf) : -1;
    ::close(fd);
    if (n < 0) {
        return system_error("--key-file " + path + ": " + net::errno_text(errno));
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%03o", unsigned(st.st_mode & 0777));
        return invalid_argument("--key-file " + path + " must be a regular file of this user " +
                                "that only its owner can read (mode " + mode + "): chmod 600 " +
                                path);
    }
    std::string_view text(buf, size_t(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
        text.remove_suffix(1);
    }
    std::string key;
    if (!from_hex(text, &key) || key.size() != key_bytes) {
        return invalid_argument("--key-file " + path + ": expected " +
                                std::to_string(2 * key_bytes) + " hex digits");
    }
    return key;
}

}  // namespace loom::inc
