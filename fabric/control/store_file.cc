// SPDX-License-Identifier: Apache-2.0
// The state file (store_file.hh).
#include "store_file.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/net.hh"
#include "base/text_file.hh"

namespace loom::control {
namespace {

using json = nlohmann::json;

constexpr int state_format       = 2;  // 1: members only, still read
constexpr size_t max_state_bytes = size_t{256} << 20;

status write_all(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return system_error(net::errno_text(errno));
        }
        done += size_t(n);
    }
    return status::ok();
}

// The rename is only durable once the folder's entry is on disk too.
void sync_folder(const std::string& path) {
    std::string folder = std::filesystem::path(path).parent_path().string();
    int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)::fsync(fd);
        ::close(fd);
    }
}

}  // namespace

status save_state(const std::string& path, const std::vector<member>& members, uint64_t next_id) {
    stored_table t;
    t.members = members;
    t.next_id = next_id;
    return save_state(path, t);
}

status save_state(const std::string& path, const stored_table& t) {
    json table = {{"format", state_format},
                  {"next_id", t.next_id},
                  {"members", json::array()},
                  {"next_allocation_id", t.next_allocation_id},
                  {"allocations", json::array()}};
    for (const allocation& a : t.allocations) {
        table["allocations"].push_back({{"id", a.id},
                                        {"lease", a.lease},
                                        {"job", a.job},
                                        {"comm", a.comm},
                                        {"nodes", a.nodes},
                                        {"slots", a.slots},
                                        {"state", allocation_state_name(a.state)},
                                        {"revoked_because", a.revoked_because},
                                        {"granted_unix_s", a.granted_unix_s}});
    }
    for (const member& m : t.members) {
        table["members"].push_back({{"id", m.id},
                                    {"name", m.name},
                                    {"kind", kind_name(m.kind)},
                                    {"addresses", m.addresses},
                                    {"lease", m.lease},
                                    {"state", state_name(m.state)},
                                    {"drained", m.drained},
                                    {"slots", m.slots},
                                    {"joined_unix_s", m.joined_unix_s}});
    }
    std::string text = table.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
    std::string tmp  = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return system_error("--state " + tmp + ": cannot create: " + net::errno_text(errno));
    }
    status st = write_all(fd, text);
    if (st && ::fsync(fd) != 0) {
        st = system_error(net::errno_text(errno));
    }
    ::close(fd);
    if (!st) {
        ::unlink(tmp.c_str());
        return st.prefix("--state " + tmp + ": cannot write: ");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        return system_error("--state: cannot rename " + tmp + " to " + path + ": " +
                            net::errno_text(err));
    }
    sync_folder(path);
    return status::ok();
}

result<stored_table> load_state(const std::string& path) {
    int open_errno = 0;
    auto text      = read_text_file(path, "--state file", max_state_bytes, &open_errno);
    if (!text) {
        if (open_errno == ENOENT) {
            return stored_table{};
        }
        return text.error();
    }
    json table = json::parse(*text, nullptr, false);
    auto bad   = [&](const std::string& why) {
        return invalid_argument("--state " + path + ": " + why +
                                  " (not a state file of loom-ctld; move it away to start empty)");
    };
    if (table.is_discarded() || !table.is_object()) {
        return bad("not JSON");
    }
    int format = table.value("format", 0);
    if ((format != 1 && format != state_format) || !table["members"].is_array() ||
        !table["next_id"].is_number_unsigned()) {
        return bad("unknown format");
    }
    stored_table out;
    out.next_id = table["next_id"].get<uint64_t>();
    try {
        for (const json& j : table["members"]) {
            member m;
            m.id        = j.at("id").get<uint64_t>();
            m.name      = j.at("name").get<std::string>();
            auto kind   = kind_from_name(j.at("kind").get<std::string>());
            m.addresses = j.at("addresses").get<std::vector<std::string>>();
            m.lease     = j.at("lease").get<std::string>();
            m.state =
                j.at("state").get<std::string>() == "down" ? member_state::down : member_state::up;
            m.joined_unix_s = j.at("joined_unix_s").get<int64_t>();
            m.drained       = j.value("drained", false);  // absent in files before drains
            if (!kind) {
                return bad("member " + std::to_string(m.id) + " has an unknown kind");
            }
            m.kind = *kind;
            // Format 1 had no slots: an in-network member has the default until it rejoins.
            m.slots = j.value("slots", m.kind == member_kind::host ? 0u : default_slots);
            out.members.push_back(std::move(m));
        }
    } catch (const json::exception& e) {
        return bad(std::string("a member is malformed: ") + e.what());
    }
    if (format == 1) {
        return out;
    }
    if (!table["allocations"].is_array() || !table["next_allocation_id"].is_number_unsigned()) {
        return bad("format 2 without its allocations");
    }
    out.next_allocation_id = table["next_allocation_id"].get<uint64_t>();
    try {
        for (const json& j : table["allocations"]) {
            allocation a;
            a.id    = j.at("id").get<uint64_t>();
            a.lease = j.at("lease").get<std::string>();
            a.job   = j.at("job").get<std::string>();
            a.comm  = j.at("comm").get<std::string>();
            a.nodes = j.at("nodes").get<std::vector<std::string>>();
            a.slots = j.at("slots").get<uint32_t>();
            a.state = j.at("state").get<std::string>() == "revoked" ? allocation_state::revoked
                                                                    : allocation_state::active;
            a.revoked_because = j.value("revoked_because", "");
            a.granted_unix_s  = j.at("granted_unix_s").get<int64_t>();
            out.allocations.push_back(std::move(a));
        }
    } catch (const json::exception& e) {
        return bad(std::string("an allocation is malformed: ") + e.what());
    }
    return out;
}

}  // namespace loom::control
