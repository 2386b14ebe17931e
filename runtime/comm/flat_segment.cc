// SPDX-License-Identifier: Apache-2.0
// The node's flat segment (flat_segment.hh).
#include "comm/flat_segment.hh"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "base/hash.hh"
#include "base/log.hh"
#include "base/net.hh"

namespace loom::comm {
namespace {

constexpr uint64_t flat_magic     = 0x74616c666d6f6f6cull;  // "loomflat"
constexpr uint32_t flat_version   = 1;
constexpr const char* flat_prefix = "loomflat-";

size_t align_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

// LL words for `max_bytes` of data (4 data bytes per 8-byte word), whole cache lines.
size_t slot_bytes_for(size_t max_bytes) {
    return align_up((max_bytes + 3) / 4 * 8, 64);
}

size_t data_offset_for(int size) {
    return align_up(64 * (1 + size_t(size)), 4096);
}

size_t total_for(int size, size_t max_bytes) {
    return data_offset_for(size) + size_t(size) * 2 * slot_bytes_for(max_bytes);
}

bool pid_gone(pid_t pid) {
    return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

flat_segment& flat_segment::operator=(flat_segment&& o) noexcept {
    if (this != &o) {
        unlink();
        unmap();
        base_        = std::exchange(o.base_, nullptr);
        bytes_       = std::exchange(o.bytes_, 0);
        data_offset_ = o.data_offset_;
        name_        = std::move(o.name_);
        owner_       = std::exchange(o.owner_, false);
    }
    return *this;
}

flat_segment::~flat_segment() {
    unlink();
    unmap();
}

void flat_segment::unmap() {
    if (base_ != nullptr) {
        ::munmap(base_, bytes_);
        base_  = nullptr;
        bytes_ = 0;
    }
}

void flat_segment::unlink() {
    if (owner_ && !name_.empty()) {
        ::shm_unlink(("/" + name_).c_str());
        owner_ = false;
    }
}

std::string flat_segment::name_for(const std::string& job, uint16_t comm_id) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "%s%016llx-%d", flat_prefix,
                  static_cast<unsigned long long>(fnv1a64(job) ^ comm_id), int(::getpid()));
    return buf;
}

int flat_segment::reclaim_dead() {
    DIR* dir = ::opendir("/dev/shm");
    if (dir == nullptr) {
        return 0;
    }
    int removed = 0;
    while (struct dirent* e = ::readdir(dir)) {
        if (std::strncmp(e->d_name, flat_prefix, std::strlen(flat_prefix)) != 0) {
            continue;
        }
        const char* dash = std::strrchr(e->d_name, '-');
        long pid         = dash != nullptr ? std::strtol(dash + 1, nullptr, 10) : 0;
        if (pid > 0 && pid_gone(pid_t(pid)) &&
            ::shm_unlink((std::string("/") + e->d_name).c_str()) == 0) {
            ++removed;
            LOOM_LOG_INFO(log::subsystem::net,
                          "flat: reclaimed /dev/shm/%s (creator pid %ld is gone)", e->d_name, pid);
        }
    }
    ::closedir(dir);
    return removed;
}

result<flat_segment> flat_segment::create(const std::string& name, int size, size_t max_bytes) {
    reclaim_dead();
    const std::string path = "/" + name;
    int fd                 = ::shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        return system_error("shm_open(" + path + "): " + net::errno_text(errno));
    }
    flat_segment s;
    s.name_        = name;
    s.owner_       = true;
    s.data_offset_ = data_offset_for(size);
    size_t total   = total_for(size, max_bytes);
    if (::ftruncate(fd, off_t(total)) != 0) {
        int err = errno;
        ::close(fd);
        return system_error("ftruncate(" + path + ", " + std::to_string(total) +
                            "): " + net::errno_text(err));
    }
    void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err    = errno;
    ::close(fd);
    if (base == MAP_FAILED) {
        return system_error("mmap(" + path + "): " + net::errno_text(err));
    }
    s.base_  = base;
    s.bytes_ = total;
    // The file is zero-filled: every flag reads 0, which no call uses (flat_offload.hh).
    auto* h        = new (base) flat_header{};
    h->version     = flat_version;
    h->size        = uint32_t(size);
    h->slot_bytes  = slot_bytes_for(max_bytes);
    h->total_bytes = total;
    h->creator_pid = int32_t(::getpid());
    for (int r = 0; r < size; ++r) {
        new (s.line(r)) flat_rank_line{};
    }
    // Last, released: a rank that sees the magic (attach) sees the layout.
    std::atomic_ref<uint64_t>(h->magic).store(flat_magic, std::memory_order_release);
    return s;
}

result<flat_segment> flat_segment::attach(const std::string& name, int size, size_t max_bytes) {
    const std::string path = "/" + name;
    int fd                 = ::shm_open(path.c_str(), O_RDWR, 0);
    if (fd < 0) {
        return system_error("shm_open(" + path + "): " + net::errno_text(errno));
    }
    struct stat st {};
    const size_t total = total_for(size, max_bytes);
    if (::fstat(fd, &st) != 0 || size_t(st.st_size) != total) {
        ::close(fd);
        return system_error("flat segment " + path + " has " + std::to_string(st.st_size) +
                            " bytes, " + std::to_string(total) +
                            " expected (another LOOM_FLAT_MAX_BYTES or size?)");
    }
    void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err    = errno;
    ::close(fd);
    if (base == MAP_FAILED) {
        return system_error("mmap(" + path + "): " + net::errno_text(err));
    }
    flat_segment s;
    s.base_              = base;
    s.bytes_             = total;
    s.name_              = name;
    s.data_offset_       = data_offset_for(size);
    const flat_header* h = s.header();
    bool same = std::atomic_ref<uint64_t>(s.header()->magic).load(std::memory_order_acquire) ==
                    flat_magic &&
                h->version == flat_version && h->size == uint32_t(size) &&
                h->slot_bytes == slot_bytes_for(max_bytes) && h->total_bytes == total;
    if (!same) {
        return system_error("flat segment " + path + " is not one for " + std::to_string(size) +
                            " ranks and " + std::to_string(max_bytes) + "-byte calls");
    }
    return s;
}

}  // namespace loom::comm
