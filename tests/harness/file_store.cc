// SPDX-License-Identifier: Apache-2.0
#include "file_store.hh"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/clock.hh"
#include "sleep.hh"

namespace loom::test {

std::string file_store::path_of(std::string_view key) const {
    std::string name;
    for (char c : key) {
        name += (c == '/') ? '%' : c;  // keys like "shm/job/3" become one file name
    }
    return dir_ + "/" + name;
}

status file_store::set(std::string_view key, std::string_view value) {
    std::string path = path_of(key);
    std::string tmp  = path + ".tmp." + std::to_string(::getpid());
    int fd           = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0) {
        return system_error("file_store: open " + tmp + ": " + std::strerror(errno));
    }
    bool ok = ::write(fd, value.data(), value.size()) == ssize_t(value.size());
    ::close(fd);
    // link() fails if the key exists: set-once, and readers never see a partial value.
    int rc  = ok ? ::link(tmp.c_str(), path.c_str()) : -1;
    int err = errno;
    ::unlink(tmp.c_str());
    if (rc != 0) {
        return system_error("file_store: set '" + std::string(key) +
                            "': " + (ok ? std::strerror(err) : "short write"));
    }
    return status::ok();
}

result<std::string> file_store::get(std::string_view key, double timeout_s) {
    std::string path = path_of(key);
    deadline until(timeout_s);
    for (;;) {
        int fd = ::open(path.c_str(), O_RDONLY);
        if (fd >= 0) {
            std::string value;
            char buf[512];
            ssize_t n;
            while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
                value.append(buf, size_t(n));
            }
            ::close(fd);
            return value;
        }
        if (until.expired()) {
            return status(LOOM_ERR_TIMEOUT, "file_store: key '" + std::string(key) +
                                                "' not set within " + std::to_string(timeout_s) +
                                                " s");
        }
        sleep_s(0.001);  // a test store, not a hot path
    }
}

status file_store::wait(const std::vector<std::string>& keys, double timeout_s) {
    deadline until(timeout_s);
    for (const auto& k : keys) {
        auto r = get(k, until.remaining_s());
        if (!r) {
            return r.error();
        }
    }
    return status::ok();
}

std::string file_store::make_dir(const char* label) {
    std::string tmpl = std::string("/tmp/loom-test-") + label + "-XXXXXX";
    char* made       = ::mkdtemp(tmpl.data());
    return made != nullptr ? std::string(made) : std::string();
}

void file_store::remove_dir(const std::string& dir) {
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d)) {
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
                ::unlink((dir + "/" + e->d_name).c_str());
            }
        }
        ::closedir(d);
    }
    ::rmdir(dir.c_str());
}

}  // namespace loom::test
