// SPDX-License-Identifier: Apache-2.0
// shm segments: parameters, names, create/attach, and reclaiming what killed runs left.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "base/check.hh"
#include "base/log.hh"
#include "base/net.hh"
#include "drivers/shm/shm.hh"
#include "drivers/shm/shm_params.hh"

namespace loom::drivers::shm {
namespace {

bool power_of_two(int64_t v) {
    return v > 0 && (v & (v - 1)) == 0;
}

status bad_param(const char* name, int64_t v, const char* allowed) {
    return invalid_argument(std::string(name) + "=" + std::to_string(v) + ": " + allowed);
}

size_t align_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

// True only when the kernel says no such process: EPERM means it exists (another user).
// Gone, or a zombie: a rank killed with its launcher is reparented, and until something
// reaps it kill(pid, 0) still succeeds although it will never touch its segment again.
bool pid_dead(pid_t pid) {
    if (pid <= 0) {
        return false;
    }
    if (::kill(pid, 0) == -1) {
        return errno == ESRCH;
    }
    char path[32], stat[256];
    std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    ssize_t n = ::read(fd, stat, sizeof stat - 1);
    ::close(fd);
    stat[n > 0 ? n : 0] = '\0';
    const char* close   = std::strrchr(stat, ')');  // the state follows the name
    return close != nullptr && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

// The inode of our pid namespace. Containers may share /dev/shm without sharing pids: a
// segment made in another namespace is never judged by a pid that means nothing here.
uint64_t pid_namespace() {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? uint64_t(st.st_ino) : 0;
}

}  // namespace

result<shm_params> read_params() {
    shm_params p;
    int64_t slot = params::slot_bytes.get();
    if (!power_of_two(slot) || slot < 256 || slot > (1 << 20)) {
        return bad_param("LOOM_SHM_SLOT_BYTES", slot, "a power of two in 256..1048576");
    }
    int64_t slots = params::ring_slots.get();
    if (!power_of_two(slots) || slots < 2 || slots > 65536) {
        return bad_param("LOOM_SHM_RING_SLOTS", slots, "a power of two in 2..65536");
    }
    int64_t early = params::unexpected.get();
    if (early < 1 || early > 65536) {
        return bad_param("LOOM_SHM_UNEXPECTED", early, "1..65536");
    }
    int64_t ops = params::max_ops.get();
    if (ops < 1 || ops > (1 << 24)) {
        return bad_param("LOOM_SHM_MAX_OPS", ops, "1..16777216");
    }
    int64_t bounce = params::bounce_bytes.get();
    if (!power_of_two(bounce) || bounce < 4096 || bounce > (int64_t{1} << 30)) {
        return bad_param("LOOM_SHM_BOUNCE_BYTES", bounce, "a power of two in 4096..2^30");
    }
    double liveness_ms = params::liveness_ms.get();
    if (!(liveness_ms > 0 && liveness_ms <= 60000)) {
        return invalid_argument("LOOM_SHM_LIVENESS_MS=" + params::liveness_ms.text() +
                                ": a number of milliseconds in (0, 60000]");
    }
    p.slot_bytes          = static_cast<uint32_t>(slot);
    p.ring_slots          = static_cast<uint32_t>(slots);
    p.unexpected_per_peer = static_cast<uint32_t>(early);
    p.max_ops             = static_cast<uint32_t>(ops);
    p.bounce_bytes        = static_cast<uint64_t>(bounce);
    p.cma_allowed         = params::cma.get() != "off";
    p.liveness_s          = liveness_ms / 1000.0;
    return p;
}

std::string segment_stem(std::string_view job, int rank) {
    std::string clean;
    for (char c : job.substr(0, 200)) {  // NAME_MAX is 255: leave room for prefix and rank
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_';
        clean += ok ? c : '_';
    }
    if (clean.empty()) {
        clean = "job";
    }
    return std::string(segment_prefix) + clean + "-" + std::to_string(rank) + ".";
}

std::string segment_name(std::string_view job, int rank, pid_t owner) {
    return segment_stem(job, rank) + std::to_string(owner);
}

// ---------------------------------------------------------------- segment

segment::~segment() {
    unmap();
}

segment::segment(segment&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      name_(std::move(o.name_)),
      owner_(o.owner_) {}

segment& segment::operator=(segment&& o) noexcept {
    if (this != &o) {
        unmap();
        base_  = std::exchange(o.base_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
        name_  = std::move(o.name_);
        owner_ = o.owner_;
    }
    return *this;
}

void segment::unmap() {
    if (base_ != nullptr) {
        ::munmap(base_, bytes_);
        base_  = nullptr;
        bytes_ = 0;
    }
}

void segment::unlink() {
    if (owner_ && !name_.empty()) {
        ::shm_unlink(("/" + name_).c_str());
        owner_ = false;
    }
}

ring_spsc_view segment::ring_from(int src) const {
    const segment_header* h = header();
    char* mem = static_cast<char*>(base_) + h->rings_offset + size_t(src) * h->ring_stride;
    return ring_spsc_view::at(mem, h->ring_slots, h->slot_bytes);
}

std::atomic<uint64_t>* segment::acks() const {
    return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(base_) +
                                                    header()->acks_offset);
}

bounce_channel* segment::channel_to(int dst) const {
    const segment_header* h = header();
    return reinterpret_cast<bounce_channel*>(static_cast<char*>(base_) + h->channels_offset +
                                             size_t(dst) * h->channel_stride);
}

char* segment::channel_data(int dst) const {
    return reinterpret_cast<char*>(channel_to(dst)) + sizeof(bounce_channel);
}

namespace {

// Offsets of every region, each on its own cache line (rings on a page, so a ring's
// control lines and first slots do not share a page with the previous ring's tail).
void lay_out(segment_header* h, const shm_params& p, int size) {
    h->slot_bytes      = p.slot_bytes;
    h->ring_slots      = p.ring_slots;
    h->max_ops         = p.max_ops;
    h->bounce_bytes    = p.bounce_bytes;
    h->rings_offset    = align_up(sizeof(segment_header), 4096);
    h->ring_stride     = align_up(ring_spsc_bytes(p.ring_slots, p.slot_bytes), 4096);
    h->acks_offset     = h->rings_offset + size_t(size) * h->ring_stride;
    h->channels_offset = align_up(h->acks_offset + size_t{p.max_ops} * 8, 4096);
    h->channel_stride  = align_up(sizeof(bounce_channel) + p.bounce_bytes, 4096);
    h->total_bytes     = h->channels_offset + size_t(size) * h->channel_stride;
}

// Opens the name exclusively; a stale segment of a dead owner is reclaimed and retried once.
result<int> create_exclusive(const std::string& path) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        int fd = ::shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0) {
            return fd;
        }
        if (errno != EEXIST) {
            return system_error("shm_open(" + path + "): " + net::errno_text(errno));
        }
        reclaim_dead_segments();
    }
    return system_error("shared-memory segment " + path +
                        " exists and its owner is alive (another run with the same job name?)");
}

}  // namespace

result<segment> segment::create(const std::string& name, const shm_params& p, int rank, int size) {
    std::string path = "/" + name;
    LOOM_ASSIGN(int fd, create_exclusive(path));
    segment_header layout{};
    lay_out(&layout, p, size);
    segment s;
    s.name_  = name;
    s.owner_ = true;
    // Sparse: tmpfs allocates pages only when touched, so unused rings and bounce
    // channels (the CMA case) cost address space only.
    if (::ftruncate(fd, static_cast<off_t>(layout.total_bytes)) != 0) {
        int err = errno;
        ::close(fd);
        s.unlink();
        return system_error("ftruncate(" + path + ", " + std::to_string(layout.total_bytes) +
                            "): " + net::errno_text(err));
    }
    void* base = ::mmap(nullptr, layout.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err    = errno;
    ::close(fd);
    if (base == MAP_FAILED) {
        s.unlink();
        return system_error("mmap(" + path + "): " + net::errno_text(err));
    }
    s.base_  = base;
    s.bytes_ = layout.total_bytes;
    auto* h  = new (base) segment_header{};  // the file is zero-filled; this names the type
    lay_out(h, p, size);
    h->magic     = segment_magic;
    h->version   = layout_version;
    h->owner_pid = static_cast<int32_t>(::getpid());
    h->pid_ns    = pid_namespace();
    h->rank      = rank;
    h->size      = size;
    for (int src = 0; src < size; ++src) {
        ring_spsc_init(s.ring_from(src).control);
    }
    // A peer that sees `ready` in attach() (A7) sees the layout.
    h->state.store(state_ready, std::memory_order_release);  // R7
    return s;
}

result<segment> segment::attach(const std::string& name, pid_t pid, int rank, int size) {
    std::string path = "/" + name;
    int fd           = ::shm_open(path.c_str(), O_RDWR, 0);
    if (fd < 0) {
        return system_error("shm_open(" + path + "): " + net::errno_text(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(segment_header)) {
        ::close(fd);
        return system_error("segment " + path + " is truncated");
    }
    size_t bytes = size_t(st.st_size);
    void* base   = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err      = errno;
    ::close(fd);
    if (base == MAP_FAILED) {
        return system_error("mmap(" + path + "): " + net::errno_text(err));
    }
    segment s;
    s.base_                 = base;
    s.bytes_                = bytes;
    s.name_                 = name;
    const segment_header* h = s.header();
    bool same = h->magic == segment_magic && h->version == layout_version && h->owner_pid == pid &&
                h->rank == rank && h->size == size && h->total_bytes == bytes &&
                h->state.load(std::memory_order_acquire) == state_ready;  // A7
    if (!same) {
        return system_error("segment " + path + " is not the one rank " + std::to_string(rank) +
                            " (pid " + std::to_string(pid) + ") published for a job of " +
                            std::to_string(size) + " ranks (stale or foreign)");
    }
    return s;
}

// ---------------------------------------------------------------- crash cleanup

namespace {

// Reads the header of /dev/shm/<entry> without mapping it; false if it is not loom's.
bool read_owner(const char* entry, pid_t* owner, uint64_t* ns) {
    int fd = ::shm_open((std::string("/") + entry).c_str(), O_RDONLY, 0);
    if (fd < 0) {
        return false;
    }
    segment_header h;
    ssize_t n = ::pread(fd, &h, sizeof(h), 0);
    ::close(fd);
    // A segment still being created reads short or without magic: leave it to its owner.
    if (n != ssize_t(sizeof(h)) || h.magic != segment_magic) {
        return false;
    }
    *owner = h.owner_pid;
    *ns    = h.pid_ns;
    return true;
}

}  // namespace

int reclaim_dead_segments() {
    DIR* dir = ::opendir("/dev/shm");
    if (dir == nullptr) {
        return 0;
    }
    int removed       = 0;
    size_t prefix_len = std::strlen(segment_prefix);
    uint64_t our_ns   = pid_namespace();
    while (struct dirent* e = ::readdir(dir)) {
        if (std::strncmp(e->d_name, segment_prefix, prefix_len) != 0) {
            continue;
        }
        pid_t owner = 0;
        uint64_t ns = 0;
        if (!read_owner(e->d_name, &owner, &ns) || ns != our_ns || !pid_dead(owner)) {
            continue;
        }
        if (::shm_unlink((std::string("/") + e->d_name).c_str()) == 0) {
            ++removed;
            LOOM_LOG_INFO(log::subsystem::net, "shm: reclaimed /dev/shm/%s (owner pid %d is gone)",
                          e->d_name, int(owner));
        }
    }
    ::closedir(dir);
    return removed;
}

}  // namespace loom::drivers::shm
