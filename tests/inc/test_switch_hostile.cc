// SPDX-License-Identifier: Apache-2.0
// loom-switch against hostile and unlucky peers, each a real process or real socket beside a
// real job: a process that never joined sprays contributions claiming the job's members
// (results stay exact, the packets are counted as forged); joins without the job's ticket,
// with another job's or another node's ticket, or replayed from another link (refused); a
// join asking for more than the node's limits (refused naming the limit, the node's memory
// stays small); a shm member that shrinks its segment (the node survives); thousands of
// idle connections and a link sending garbage (the node keeps its limit and answers).
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "base/spsc_ring.hh"
#include "drivers/datagram.hh"
#include "drivers/shm/shm_datagram.hh"
#include "inc/node/ticket.hh"
#include "switch_harness.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;
using namespace loom::inc::test;

namespace {

constexpr uint32_t ranks = 4;
constexpr size_t count   = 3000;  // three chunks of 1024 (run_rank's chunk) through 2 slots
constexpr uint32_t chunk = 1024;

// A key file of the test (0600) and the ticket of `job` under it.
struct node_key {
    std::string dir = scratch_dir();
    std::string path;
    std::string bytes;
    node_key() {
        path     = dir + "/key";
        auto hex = random_secret_hex();
        assert_true(hex.is_ok());
        assert_true(from_hex(*hex, &bytes));
        int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        std::string text = *hex + "\n";
        assert_int_equal(write(fd, text.data(), text.size()), ssize_t(text.size()));
        close(fd);
    }
    ~node_key() {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
    std::string ticket(uint64_t job) const {
        digest256 t = job_ticket(
            std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), job);
        return std::string(reinterpret_cast<const char*>(t.data()), t.size());
    }
};

bool alive(const switch_proc& s) {
    return s.pid > 0 && waitpid(s.pid, nullptr, WNOHANG) == 0;
}

int64_t rss_kib(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.starts_with("VmRSS:")) {
            return std::atoll(line.c_str() + 6);
        }
    }
    return -1;
}

size_t open_fds(pid_t pid) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++n;
    }
    return n;
}

std::vector<uint8_t> forged_contribution(uint64_t job, uint64_t comm, uint32_t seq, uint32_t k,
                                         uint32_t member) {
    header h;
    h.kind        = packet_kind::contribute;
    h.dtype       = LOOM_INT32;
    h.op          = LOOM_SUM;
    h.job         = job;
    h.comm        = comm;
    h.seq         = seq;
    h.slot        = k % 2;
    h.offset      = uint64_t(k) * chunk;
    h.count       = uint32_t(std::min<size_t>(chunk, count - size_t(k) * chunk));
    h.flags       = uint16_t(k == 2 ? flag_last_chunk : 0);
    h.contributor = member;
    std::vector<int32_t> junk(h.count, 1000000);
    std::vector<uint8_t> p(header_bytes + max_payload_bytes);
    p.resize(encode(h, junk.data(), p.data()));
    return p;
}

// Finding: a process that never joined sent well-formed contributions as members of a
// running job, and 39 of 100 all-reduces came back wrong. Now they are dropped (forged).
void forger_beside_a_real_job(void**) {
    node_key key;
    switch_proc s = start_switch(
        {"--listen", fresh_address(false), "--key-file", key.path, "--max-bad-per-s", "1000000"});
    constexpr uint64_t job = 5, comm = 1, calls = 100;
    std::atomic<bool> done{false};
    std::atomic<uint64_t> sprayed{0};
    std::thread forger([&] {
        auto l = drivers::connect_datagram(s.address, 5);
        if (!l) {
            return;
        }
        while (!done) {
            for (uint32_t seq = 1; seq <= calls && !done; ++seq) {
                for (uint32_t k = 0; k < 3; ++k) {
                    for (uint32_t m = 0; m < ranks; ++m) {
                        auto p = forged_contribution(job, comm, seq, k, m);
                        (*l)->send(p.data(), p.size());
                        ++sprayed;
                    }
                }
                const uint8_t* in = nullptr;
                size_t len        = 0;
                while ((*l)->recv(&in, &len)) {
                }
            }
        }
    });
    std::vector<std::vector<int32_t>> in(ranks, std::vector<int32_t>(count));
    std::vector<std::vector<std::vector<int32_t>>> out(
        ranks, std::vector<std::vector<int32_t>>(calls, std::vector<int32_t>(count)));
    for (uint32_t r = 0; r < ranks; ++r) {
        for (size_t i = 0; i < count; ++i) {
            in[r][i] = int32_t(r * 7 + i);
        }
    }
    check_ranks(run_ranks(ranks, [&](uint32_t r) {
        std::vector<step> steps;
        for (uint32_t c = 0; c < calls; ++c) {
            steps.push_back({c + 1, LOOM_INT32, {}, in[r].data(), out[r][c].data(), count});
        }
        return run_rank(s.address, job, comm, r, flat_join(ranks, 2), steps, key.ticket(job));
    }));
    done = true;
    forger.join();
    size_t wrong = 0;
    for (uint32_t r = 0; r < ranks; ++r) {
        for (uint32_t c = 0; c < calls; ++c) {
            for (size_t i = 0; i < count; ++i) {
                if (out[r][c][i] != int32_t(42 + 4 * i)) {
                    ++wrong;
                    break;
                }
            }
        }
    }
    if (wrong != 0) {
        LOOM_FAIL(std::to_string(wrong) + " of " + std::to_string(ranks * calls) +
                  " results were wrong");
    }
    std::string text = wait_for_stat(s.address, "forged", 1);
    assert_true(stat_value(text, "forged") > 0);
    assert_true(sprayed > 0);
    stop_cleanly(s);
}

// A join must prove its job's ticket over this link's nonce: no proof, another job's
// ticket, another node's key, and a join replayed from another link are refused.
void joins_without_the_ticket_are_refused(void**) {
    node_key key, other_key;
    switch_proc s = start_switch({"--listen", fresh_address(false), "--key-file", key.path});
    auto refused  = [&](std::string_view ticket, uint64_t job) {
        auto l = drivers::connect_datagram(s.address, 5);
        assert_true(l.is_ok());
        auto r = join_node(**l, job, 1, 0, flat_join(2, 2), 5, ticket);
        assert_false(r.is_ok());
        assert_int_equal(r.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    };
    refused({}, 7);                   // no proof
    refused(key.ticket(8), 7);        // another job's ticket
    refused(other_key.ticket(7), 7);  // another node's ticket for the job
    // Replay: a join signed for link A's nonce, sent on link B.
    auto a = drivers::connect_datagram(s.address, 5), b = drivers::connect_datagram(s.address, 5);
    assert_true(a.is_ok() && b.is_ok());
    join_nonce nonce_a{}, nonce_b{};
    assert_true(await_challenge(**a, 5, &nonce_a));
    assert_true(await_challenge(**b, 5, &nonce_b));
    uint8_t pkt[header_bytes + signed_join_bytes];
    size_t len = join_packet(7, 1, 0, flat_join(2, 2), nonce_a, key.ticket(7), pkt);
    (*b)->send(pkt, len);
    std::string text = wait_for_stat(s.address, "join_auth_refused", 4);
    assert_int_equal(stat_value(text, "join_auth_refused"), 4);
    assert_int_equal(stat_value(text, "groups"), 0);
    // The rightful join on link A passes.
    (*a)->send(pkt, len);
    text = wait_for_stat(s.address, "groups", 1);
    assert_int_equal(stat_value(text, "groups"), 1);
    stop_cleanly(s);
}

// A child node proves its join to its parent with the job's ticket under the key the tree
// shares: a child with another key is refused upstream, and its member hears why.
void a_child_node_authenticates_to_its_parent(void**) {
    node_key key, other_key;
    switch_proc root = start_switch({"--listen", fresh_address(false), "--key-file", key.path});
    switch_proc good = start_switch(
        {"--listen", fresh_address(false), "--key-file", key.path, "--parent", root.address});
    switch_proc bad = start_switch(
        {"--listen", fresh_address(true), "--key-file", other_key.path, "--parent", root.address});
    join_request r   = flat_join(1, 2);
    r.parent_members = 2;
    r.parent_index   = 0;
    auto l           = drivers::connect_datagram(good.address, 5);
    assert_true(l.is_ok());
    assert_true(join_node(**l, 3, 1, 0, r, 5, key.ticket(3)).is_ok());
    r.parent_index = 1;
    auto m         = drivers::connect_datagram(bad.address, 5);
    assert_true(m.is_ok());
    auto refused = join_node(**m, 3, 1, 0, r, 5, other_key.ticket(3));
    assert_false(refused.is_ok());
    loom::test::expect_has(refused.error().message(), "parent refused");
    std::string text = wait_for_stat(root.address, "join_auth_refused", 1);
    assert_int_equal(stat_value(text, "join_auth_refused"), 1);
    stop_cleanly(bad);
    stop_cleanly(good);
    stop_cleanly(root);
}

// The node refuses to run open to anyone by accident, and keeps its key private.
void a_node_without_a_key_does_not_start(void**) {
    std::string bin = std::getenv("LOOM_SWITCH");
    std::string dir = scratch_dir();
    auto run        = [&](const std::string& args) {
        int st = std::system((bin + " " + args + " > " + dir + "/out 2>&1").c_str());
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    // No key and no --insecure; --insecure beyond loopback: refused settings, exit 2.
    assert_int_equal(run("--listen tcp:127.0.0.1:0"), 2);
    assert_int_equal(run("--listen tcp:0.0.0.0:0 --insecure"), 2);
    // A key file others can read.
    std::string loose = dir + "/loose";
    std::ofstream(loose) << std::string(64, 'a') << '\n';
    chmod(loose.c_str(), 0644);
    assert_int_equal(run("--listen tcp:127.0.0.1:0 --key-file " + loose), 2);
    assert_int_equal(run("ticket --key-file " + loose + " --job j"), 2);
    chmod(loose.c_str(), 0600);
    assert_int_equal(run("ticket --key-file " + loose + " --job j"), 0);
    std::ifstream printed(dir + "/out");
    std::string line;
    std::getline(printed, line);
    std::string bytes(64, 'a'), raw;
    assert_true(from_hex(bytes, &raw));
    assert_string_equal(
        line.c_str(),
        ticket_text(std::span(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()), "j")
            .c_str());
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

// Finding: a join for 1024 members x 32 slots grew loom-switch from 4 MB to 521 MB, and a
// huge slot count ended it with bad_alloc. Every quantity is checked before allocation.
void join_bomb_is_refused_and_memory_stays_small(void**) {
    node_key key;
    switch_proc s = start_switch(
        {"--listen", fresh_address(false), "--key-file", key.path, "--job-memory", "24"});
    int64_t before = rss_kib(s.pid);
    struct bomb {
        join_request r;
        const char* names;  // the limit the nack must name
    };
    join_request det_big      = flat_join(1024, 2);
    det_big.slots             = 32;
    det_big.flags             = join_deterministic;
    join_request slots_huge   = flat_join(4, 2);
    slots_huge.slots          = 0xffffffffu;
    join_request members_huge = flat_join(4, 2);
    members_huge.members = members_huge.expected = 0xffffffffu;
    join_request parent_huge                     = flat_join(4, 2);
    parent_huge.parent_members                   = 0xffffffffu;
    for (const bomb& b : {bomb{det_big, "--job-memory"}, bomb{slots_huge, "--job-quota"},
                          bomb{members_huge, "1024"}, bomb{parent_huge, "--parent"}}) {
        auto l = drivers::connect_datagram(s.address, 5);
        assert_true(l.is_ok());
        auto r = join_node(**l, 9, 1, 0, b.r, 5, key.ticket(9));
        assert_false(r.is_ok());
        loom::test::expect_has(r.error().message(), b.names);
    }
    // Many joins, each within the node's limits, until the job's memory is spent.
    int admitted = 0;
    std::vector<std::unique_ptr<drivers::datagram_endpoint>> held;
    for (uint64_t comm = 100; comm < 164; ++comm) {
        auto l = drivers::connect_datagram(s.address, 5);
        assert_true(l.is_ok());
        join_request r = flat_join(64, 2);
        r.slots        = 8;
        r.flags        = join_deterministic;  // 8 MiB each
        admitted += join_node(**l, 9, comm, 0, r, 5, key.ticket(9)).is_ok() ? 1 : 0;
        held.push_back(std::move(*l));
    }
    assert_true(admitted > 0 && admitted < 64);
    std::string text = wait_for_stat(s.address, "join_limit_refused", 3);
    assert_true(stat_value(text, "join_limit_refused") >= 3);
    assert_true(alive(s));
    int64_t after = rss_kib(s.pid);
    std::printf("# loom-switch VmRSS %lld KiB before, %lld KiB after the join bomb\n",
                (long long)before, (long long)after);
    assert_true(after - before < 64 * 1024);  // the job's 24 MiB, links, malloc: not 521 MB
    stop_cleanly(s);
}

// The shm hand-shake by hand: a segment of the right size and geometry, sealed or not.
struct raw_shm_member {
    int sock = -1, fd = -1;
    void* seg    = nullptr;
    size_t bytes = 0;
    ~raw_shm_member() {
        if (seg != nullptr) {
            munmap(seg, bytes);
        }
        if (fd >= 0) {
            close(fd);
        }
        if (sock >= 0) {
            close(sock);
        }
    }
};

bool shm_handshake(const std::string& address, bool seal, raw_shm_member* m) {
    using namespace drivers::shm::dgram;
    m->bytes = segment_bytes();
    m->fd    = memfd_create("hostile", MFD_CLOEXEC | (seal ? MFD_ALLOW_SEALING : 0u));
    assert_true(m->fd >= 0);
    assert_int_equal(ftruncate(m->fd, off_t(m->bytes)), 0);
    if (seal) {
        assert_int_equal(fcntl(m->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
    }
    m->seg = mmap(nullptr, m->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    assert_true(m->seg != MAP_FAILED);
    segment_header h{segment_magic, segment_version, ring_slots, slot_bytes};
    std::memcpy(m->seg, &h, sizeof h);
    ring_spsc_init(static_cast<char*>(m->seg) + cache_line);
    ring_spsc_init(static_cast<char*>(m->seg) + cache_line + ring_bytes());
    auto to = socket_address(address.substr(4));
    m->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!to || connect(m->sock, reinterpret_cast<const sockaddr*>(&to->addr), to->len) != 0) {
        return false;
    }
    assert_int_equal(send_with_fd(m->sock, &h, sizeof h, m->fd), ssize_t(sizeof h));
    timeval tv{5, 0};
    setsockopt(m->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char ok = 0;
    return recv(m->sock, &ok, 1, 0) == 1 && ok == 1;
}

// Finding: a member joined over shm, then truncated its segment, and loom-switch died of
// SIGBUS. The node now maps only segments sealed against shrinking.
void truncated_shm_segment_does_not_kill_the_node(void**) {
    switch_proc s = start_switch({"--listen", fresh_address(true)});
    {
        raw_shm_member loose;
        assert_false(shm_handshake(s.address, false, &loose));  // refused: not sealed
        ftruncate(loose.fd, 0);
    }
    {
        raw_shm_member sealed;
        assert_true(shm_handshake(s.address, true, &sealed));
        assert_int_equal(ftruncate(sealed.fd, 0), -1);  // the seal holds
        assert_int_equal(errno, EPERM);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        assert_true(alive(s));
    }
    assert_true(alive(s));
    // Still serving.
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {};
    assert_true(
        run_rank(s.address, 1, 1, 0, flat_join(1, 2), {{1, LOOM_INT32, {}, in, out, 4}}).is_ok());
    assert_int_equal(out[3], 4);
    stop_cleanly(s);
}

// Finding: 3,000 idle connections were all accepted. The node holds at most --max-links,
// a member still joins and runs, idle links are closed, and a link sending garbage too
// fast is closed.
void idle_connections_and_garbage_are_bounded(void**) {
    constexpr int limit = 64, flood = 3000;
    rlimit nofile{};
    getrlimit(RLIMIT_NOFILE, &nofile);
    rlim_t want = flood + 200;
    if (nofile.rlim_cur < want && nofile.rlim_max >= want) {
        nofile.rlim_cur = want;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    int n         = int(std::min<rlim_t>(flood, nofile.rlim_cur > 200 ? nofile.rlim_cur - 200 : 0));
    switch_proc s = start_switch({"--listen", fresh_address(false), "--max-links",
                                  std::to_string(limit), "--idle-timeout", "1"});
    uint16_t port = uint16_t(std::atoi(s.address.substr(s.address.rfind(':') + 1).c_str()));
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::vector<int> socks;
    for (int i = 0; i < n; ++i) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        socks.push_back(fd);
    }
    std::string text = wait_for_stat(s.address, "links_accepted", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    size_t fds = open_fds(s.pid);
    std::printf("# %d idle connections: loom-switch holds %zu descriptors (limit %d links)\n", n,
                fds, limit);
    assert_true(fds <= size_t(limit) + 16);
    // A member joins and runs beside the flood.
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {};
    assert_true(
        run_rank(s.address, 1, 1, 0, flat_join(1, 2), {{1, LOOM_INT32, {}, in, out, 4}}).is_ok());
    text = wait_for_stat(s.address, "links_idle_closed", 1);
    assert_true(stat_value(text, "links_evicted") + stat_value(text, "links_refused") > 0);
    assert_true(stat_value(text, "links_idle_closed") > 0);
    assert_true(stat_value(text, "links") <= limit);
    for (int fd : socks) {
        close(fd);
    }
    // Garbage faster than --max-bad-per-s closes the link; the node goes on.
    auto l = drivers::connect_datagram(s.address, 5);
    assert_true(l.is_ok());
    uint8_t junk[64];
    std::memset(junk, 0x5a, sizeof junk);
    for (int i = 0; i < 1000 && (*l)->alive(); ++i) {
        (*l)->send(junk, sizeof junk);
    }
    text = wait_for_stat(s.address, "links_bad_closed", 1);
    assert_int_equal(stat_value(text, "links_bad_closed"), 1);
    assert_true(alive(s));
    stop_cleanly(s);
}

}  // namespace

int main() {
    if (std::getenv("LOOM_SWITCH") == nullptr) {
        return 77;  // skipped: run through meson test
    }
    signal(SIGPIPE, SIG_IGN);
    const CMUnitTest tests[] = {
        cmocka_unit_test(forger_beside_a_real_job),
        cmocka_unit_test(joins_without_the_ticket_are_refused),
        cmocka_unit_test(a_child_node_authenticates_to_its_parent),
        cmocka_unit_test(a_node_without_a_key_does_not_start),
        cmocka_unit_test(join_bomb_is_refused_and_memory_stays_small),
        cmocka_unit_test(truncated_shm_segment_does_not_kill_the_node),
        cmocka_unit_test(idle_connections_and_garbage_are_bounded),
    };
    return LOOM_RUN_TESTS("inc_switch_hostile", tests);
}
