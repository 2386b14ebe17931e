// SPDX-License-Identifier: Apache-2.0
// The file store: a directory that all ranks share (one host, or a shared file system), one
// file per key. A value is written to a temporary file and published by an exclusive atomic
// rename (renameat2 RENAME_NOREPLACE), so a reader sees a whole value or nothing and a key
// is set at most once. Files carry the job id, so jobs can share a directory:
//   <job>.rank.<r>   rank r registered (holds the job size: a wrong size is caught)
//   <job>.key.<k>    a value (the key escaped as %XX outside [A-Za-z0-9._-])
//   <job>.done.<r>   rank r has closed its store
// Rank 0 removes the job's files when its store is destroyed, after every rank that
// registered has closed its store (or the linger time passed), as the TCP store's rank 0
// does.
//
// Trust: the directory must be this user's and private (mode 0700; the store creates it so
// and refuses any other), so nobody else can plant or read keys. Every file starts with a
// stamp, "loom1 <writer pid> <its start time> <fingerprint>\n": a file whose writer has died
// is stale (a launch killed during start-up) and is removed and replaced, so a job id is
// never blocked for good; a file with another fingerprint (a hash of another
// LOOM_JOB_SECRET) belongs to another launch that shares this job id, which is refused.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "base/secret.hh"

#include "base/check.hh"
#include "base/clock.hh"
#include "base/log.hh"
#include "bootstrap/bootstrap_params.hh"
#include "bootstrap/store_internal.hh"

namespace loom::bootstrap::detail {
namespace {

namespace fs = std::filesystem;

std::string escape_key(std::string_view key) {
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char ch : key) {
        if (std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-') {
            out.push_back(static_cast<char>(ch));
        } else {
            out += {'%', hex[ch >> 4], hex[ch & 15]};
        }
    }
    return out;
}

// 0 with `out` filled, or the errno of the failure (ENOENT: not there yet).
int read_file(const std::string& path, std::string* out) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    out->clear();
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        out->append(buf, static_cast<size_t>(n));
    }
    int err = n < 0 ? errno : 0;
    close(fd);
    return err;
}

struct stamp {
    pid_t pid = 0;
    std::string started, fingerprint;
};

// Splits a file into its stamp and value; false when it has none (not written by a store).
bool unstamp(const std::string& file, stamp* st, std::string* value) {
    size_t eol = file.find('\n');
    if (eol == std::string::npos) {
        return false;
    }
    std::istringstream head(file.substr(0, eol));
    std::string magic;
    long pid = 0;
    if (!(head >> magic >> pid >> st->started >> st->fingerprint) || magic != "loom1") {
        return false;
    }
    st->pid = static_cast<pid_t>(pid);
    *value  = file.substr(eol + 1);
    return true;
}

class file_store final : public kv_store {
  public:
    file_store(std::string dir, const identity& me, double timeout_s)
        : dir_(std::move(dir)), job_(escape_key(me.job)), me_(me), timeout_s_(timeout_s) {
        own_.pid         = getpid();
        own_.started     = process_start_time(own_.pid);
        own_.fingerprint = "-";
        if (!me.secret.empty()) {
            std::string key;
            from_hex(me.secret, &key);
            digest256 d      = hmac_sha256(key, "loom file store\n" + me.job);
            own_.fingerprint = to_hex(std::span(d.data(), 8));
        }
    }
    ~file_store() override;

    status attach();  // checks the directory and sizes, and registers this rank
    status check_directory() const;
    // A launch killed before its rank 0 tidied up leaves its default directory behind, under
    // a job id no later launch will use again: rank 0 of a default directory removes those
    // of its siblings that are stale (remove_stale_rendezvous).
    void sweep_stale_siblings() const;

    status set(std::string_view key, std::string_view value) override {
        if (key.empty()) {
            return invalid_argument("bootstrap: rank " + std::to_string(me_.rank) +
                                    " sets an empty key");
        }
        return publish(key_path(key), value, "key '" + std::string(key) + "'");
    }

    result<std::string> get(std::string_view key, double timeout_s) override {
        deadline until(timeout_s);
        backoff wait;
        std::string value, path = key_path(key);
        for (;;) {
            int err = read_value(path, &value);
            if (err == 0) {
                return value;
            }
            if (err == EXDEV) {
                return foreign(path);
            }
            if (err != ENOENT) {
                return system_error(who() + " cannot read " + path + ": " + std::strerror(err));
            }
            if (until.expired()) {
                return timed_out(key, timeout_s);
            }
            wait.pause(until.remaining_s());
        }
    }

    status wait(const std::vector<std::string>& keys, double timeout_s) override {
        deadline until(timeout_s);
        for (const auto& k : keys) {
            auto value = get(k, std::max(0.0, until.remaining_s()));
            if (!value) {
                // Name the whole wait's timeout, not the remainder this key was given.
                return value.error().code() == LOOM_ERR_TIMEOUT ? timed_out(k, timeout_s)
                                                                : value.error();
            }
        }
        return status::ok();
    }

  private:
    std::string who() const { return "bootstrap: rank " + std::to_string(me_.rank); }
    status timed_out(std::string_view key, double timeout_s) const {
        return timeout_error(who() + " timed out after " + seconds_text(timeout_s) +
                             " waiting for key '" + std::string(key) + "' in the file store " +
                             dir_ + " (job '" + me_.job +
                             "'; never registered: " + never_registered() + ")");
    }
    std::string path(const std::string& kind, const std::string& name) const {
        return dir_ + "/" + job_ + "." + kind + "." + name;
    }
    std::string key_path(std::string_view key) const { return path("key", escape_key(key)); }
    std::string rank_path(int r) const { return path("rank", std::to_string(r)); }
    std::string done_path(int r) const { return path("done", std::to_string(r)); }

    status publish(const std::string& final_path, std::string_view value, const std::string& what);
    status publish_once(const std::string& final_path, std::string_view value,
                        const std::string& what);
    // Reads a value: 0, ENOENT when absent or stale (then removed), EXDEV when another
    // launch wrote it, or another errno.
    int read_value(const std::string& path, std::string* value);
    status foreign(const std::string& path) const {
        return invalid_argument(
            who() + ": " + path + " was written by another launch of job '" + me_.job +
            "' (a different LOOM_JOB_SECRET): two jobs share one job id; give each launch its "
            "own LOOM_JOB");
    }
    std::string never_registered() const {
        return missing_ranks(0, me_.size,
                             [&](int r) { return access(rank_path(r).c_str(), F_OK) == 0; });
    }
    void linger_and_remove();

    std::string dir_;
    std::string job_;  // the job id as it appears in file names
    identity me_;
    double timeout_s_;
    bool attached_ = false;
    stamp own_;  // what this process writes at the head of its files
};

int file_store::read_value(const std::string& path, std::string* value) {
    std::string file;
    if (int err = read_file(path, &file); err != 0) {
        return err;
    }
    stamp st;
    if (!unstamp(file, &st, value)) {
        return EXDEV;  // not a store's file: never trusted
    }
    if (st.fingerprint != own_.fingerprint) {
        return EXDEV;
    }
    if (st.pid != own_.pid && process_start_time(st.pid) != st.started) {
        unlink(path.c_str());  // its writer is gone: a killed launch's leftover
        return ENOENT;
    }
    return 0;
}

// Publishes; a stale file in the way (its writer is dead) is removed and the publish tried
// once more.
status file_store::publish(const std::string& final_path, std::string_view value,
                           const std::string& what) {
    status st = publish_once(final_path, value, what);
    if (st.code() == LOOM_ERR_INVALID_ARGUMENT) {
        std::string existing;
        int err = read_value(final_path, &existing);
        if (err == EXDEV) {
            return foreign(final_path);
        }
        if (err == ENOENT) {
            st = publish_once(final_path, value, what);
        }
    }
    return st;
}

status file_store::publish_once(const std::string& final_path, std::string_view value,
                                const std::string& what) {
    static std::atomic<unsigned> serial{0};
    std::string tmp = dir_ + "/." + job_ + ".tmp." + std::to_string(me_.rank) + "." +
                      std::to_string(getpid()) + "." + std::to_string(serial++);
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return system_error(who() + " cannot create " + tmp + ": " + std::strerror(errno));
    }
    std::string text = "loom1 " + std::to_string(own_.pid) + " " + own_.started + " " +
                       own_.fingerprint + "\n" + std::string(value);
    bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    int err      = written ? 0 : errno;
    close(fd);
    if (written &&
        renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) == 0) {
        return status::ok();
    }
    err = written ? errno : err;
    unlink(tmp.c_str());
    if (err == EEXIST) {
        return invalid_argument(who() + " sets " + what + ", which is already set in " + dir_);
    }
    return system_error(who() + " cannot publish " + what + " in " + dir_ + ": " +
                        std::strerror(err));
}

// The directory is created 0700; an existing one must be a real directory of this user that
// nobody else can enter: otherwise another user could have planted keys (addresses) in it.
status file_store::check_directory() const {
    std::error_code ec;
    fs::path parent = fs::path(dir_).parent_path();
    if (!parent.empty()) {
        fs::create_directories(parent, ec);
    }
    if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
        return system_error(who() + " cannot create the file store directory " + dir_ + ": " +
                            std::strerror(errno));
    }
    struct stat st;
    if (lstat(dir_.c_str(), &st) != 0) {
        return system_error(who() + " cannot examine the file store directory " + dir_ + ": " +
                            std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        return invalid_argument(
            who() + " refuses the file store " + dir_ + ": it is " +
            (S_ISDIR(st.st_mode) ? "a directory" : "not a directory") + " owned by uid " +
            std::to_string(st.st_uid) + " with mode " + mode + ", but must be a directory of uid " +
            std::to_string(geteuid()) +
            " with mode 0700 (others could plant keys in it); remove it, or choose another "
            "directory (LOOM_BOOTSTRAP=file:DIR, or TMPDIR)");
    }
    return status::ok();
}

void file_store::sweep_stale_siblings() const {
    fs::path self   = fs::path(dir_);
    std::string own = "loom-bootstrap-" + std::to_string(geteuid()) + "-";
    if (me_.rank == 0 && self.filename().string().starts_with(own)) {
        remove_stale_rendezvous(self.parent_path().string(), dir_);
    }
}

status file_store::attach() {
    LOOM_CHECK(check_directory());
    sweep_stale_siblings();
    // The ranks already registered say how many ranks the job has; a later rank with another
    // size finds out here (an earlier one, when that later rank attaches).
    for (int r = 0; r < me_.size; ++r) {
        std::string size;
        int err = r != me_.rank ? read_value(rank_path(r), &size) : ENOENT;
        if (err == EXDEV) {
            return foreign(rank_path(r));
        }
        if (err == 0 && size != std::to_string(me_.size)) {
            return invalid_argument(who() + " says the job has " + std::to_string(me_.size) +
                                    " ranks but rank " + std::to_string(r) + " in " + dir_ +
                                    " says " + size);
        }
    }
    std::string mine;
    if (read_value(rank_path(me_.rank), &mine) == EXDEV) {
        return foreign(rank_path(me_.rank));
    }
    status st = publish(rank_path(me_.rank), std::to_string(me_.size), "its registration");
    if (st.code() == LOOM_ERR_INVALID_ARGUMENT) {
        return invalid_argument(who() + " registered twice in the file store " + dir_ +
                                " (two processes of job '" + me_.job + "' claim rank " +
                                std::to_string(me_.rank) + ")");
    }
    attached_ = st.is_ok();
    return st;
}

file_store::~file_store() {
    if (!attached_) {
        return;
    }
    if (me_.rank != 0) {
        (void)publish(done_path(me_.rank), "", "its done marker");
        return;
    }
    linger_and_remove();
}

void file_store::linger_and_remove() {
    deadline until(std::min(timeout_s_, me_.linger_s));
    backoff wait(0.05);
    for (int r = 1; r < me_.size && !until.expired();) {
        bool registered = access(rank_path(r).c_str(), F_OK) == 0;
        if (!registered || access(done_path(r).c_str(), F_OK) == 0) {
            ++r;
        } else {
            wait.pause(until.remaining_s());
        }
    }
    std::string prefix = job_ + ".";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        if (entry.path().filename().string().starts_with(prefix)) {
            fs::remove(entry.path(), ec);
        }
    }
    rmdir(dir_.c_str());  // fails, as it should, while other jobs' files are there
}

}  // namespace

std::string process_start_time(pid_t pid) {
    std::string stat;
    if (read_file("/proc/" + std::to_string(pid) + "/stat", &stat) != 0) {
        return "";
    }
    size_t close = stat.rfind(')');
    if (close == std::string::npos) {
        return "";
    }
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    // Field 3 (state) is the first after the name; start time is field 22.
    for (int i = 3; i <= 22 && fields >> field; ++i) {
    }
    return field;
}

namespace {

// A temporary file's writer is in its name: .<job>.tmp.<rank>.<pid>.<serial>; true when that
// process is gone (a writer killed mid-write leaves a file without a whole stamp).
bool temporary_of_dead_writer(const std::string& name) {
    size_t at = name.find(".tmp.");
    if (!name.starts_with(".") || at == std::string::npos) {
        return false;
    }
    std::istringstream fields(name.substr(at + 5));
    std::string rank, pid;
    if (!std::getline(fields, rank, '.') || !std::getline(fields, pid, '.') || pid.empty() ||
        pid.find_first_not_of("0123456789") != std::string::npos) {
        return false;
    }
    return process_start_time(static_cast<pid_t>(std::stol(pid))).empty();
}

// stale: every file was written by a process that is gone, or the directory has been empty
// for longer than any launch takes between creating it and registering its first rank.
bool stale_rendezvous(const fs::path& dir, const struct stat& st) {
    constexpr double empty_grace_s = 60;
    bool stale = false, any = false;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        any              = true;
        std::string name = entry.path().filename().string();
        std::string file, value;
        stamp writer;
        if (temporary_of_dead_writer(name)) {
            stale = true;
            continue;
        }
        if (read_file(entry.path().string(), &file) != 0 || !unstamp(file, &writer, &value)) {
            return false;  // not a store's file, or being written: leave the directory be
        }
        if (process_start_time(writer.pid) == writer.started) {
            return false;  // a live process's file
        }
        stale = true;
    }
    if (ec) {
        return false;
    }
    return any ? stale : difftime(time(nullptr), st.st_mtime) > empty_grace_s;
}

}  // namespace

int remove_stale_rendezvous(const std::string& parent, const std::string& keep) {
    std::string own = "loom-bootstrap-" + std::to_string(geteuid()) + "-";
    int removed     = 0;
    std::error_code ec;
    for (const auto& sibling : fs::directory_iterator(parent, ec)) {
        std::string name = sibling.path().filename().string();
        struct stat st;
        if (!name.starts_with(own) || sibling.path() == fs::path(keep) ||
            lstat(sibling.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid() || !stale_rendezvous(sibling.path(), st)) {
            continue;
        }
        std::error_code inner;
        if (fs::remove_all(sibling.path(), inner) > 0 && !inner) {
            ++removed;
            LOOM_LOG_INFO(log::subsystem::init,
                          "bootstrap: removed %s (its job's processes are gone)",
                          sibling.path().c_str());
        }
    }
    return removed;
}

int remove_job_rendezvous(const std::string& dir, const std::string& job) {  // bootstrap.hh
    std::string escaped = escape_key(job);
    int removed         = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::string name = entry.path().filename().string();
        if (name.starts_with(escaped + ".") || name.starts_with("." + escaped + ".tmp.")) {
            removed += fs::remove(entry.path(), ec) ? 1 : 0;
        }
    }
    rmdir(dir.c_str());  // fails, as it should, while other jobs' files are there
    return removed;
}

result<std::unique_ptr<kv_store>> open_file_store(const std::string& dir, const identity& me,
                                                  double timeout_s) {
    auto store = std::make_unique<file_store>(dir, me, timeout_s);
    LOOM_CHECK(store->attach());
    return std::unique_ptr<kv_store>(std::move(store));
}

}  // namespace loom::bootstrap::detail

namespace loom::bootstrap {

int remove_stale_rendezvous() {
    return detail::remove_stale_rendezvous(params::tmpdir.get(), "");
}

int remove_job_rendezvous(const std::string& dir, const std::string& job) {
    return detail::remove_job_rendezvous(dir, job);
}

}  // namespace loom::bootstrap
