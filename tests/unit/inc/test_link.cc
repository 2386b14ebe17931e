// inc/transport links over real sockets and shared memory, between real processes (fork):
// over tcp and shm both sides exchange thousands of encoded packets of every size, each
// parsed and checked on arrival, in order; a burst the peer does not read is dropped and
// counted, never blocks; a peer that exits is seen as gone within a second; a tcp frame
// longer than any packet closes the link; lossy_link drops and duplicates as asked; a
// connect nobody answers times out naming the address; an unknown address form is refused.
//
// Every wait has a deadline, and idle poll loops yield (the test machines may have 2 cores).
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/clock.hh"
#include "inc/protocol/packet.hh"
#include "inc/transport/link.hh"
#include "test_main.hh"

using namespace loom;
using namespace loom::inc;

namespace {

using inc_link = loom::inc::link;  // unqualified `link` would also name POSIX link(2)

constexpr size_t max_packet = header_bytes + max_payload_bytes;
constexpr int exchanged     = 2000;

// Packet i: a contribution of (i × 37) mod 2049 int32 elements (0 … 8192 bytes), element k
// holding i × 31 + k, so any mix-up of packets or bytes shows.
size_t make_packet(uint32_t i, uint8_t* out) {
    header h;
    h.kind  = packet_kind::contribute;
    h.dtype = LOOM_INT32;
    h.job   = 7;
    h.seq   = i;
    h.count = (i * 37) % 2049;
    std::vector<int32_t> payload(h.count);
    for (uint32_t k = 0; k < h.count; ++k) {
        payload[k] = int32_t(i * 31 + k);
    }
    return encode(h, payload.data(), out);
}

/// True when `p` is make_packet(i)'s packet, intact.
bool is_packet(const uint8_t* p, size_t len, uint32_t i) {
    header h;
    const uint8_t* payload = nullptr;
    if (parse(p, len, &h, &payload) != parse_error::none || h.seq != i || h.job != 7 ||
        h.count != (i * 37) % 2049) {
        return false;
    }
    for (uint32_t k = 0; k < h.count; ++k) {
        int32_t v;
        std::memcpy(&v, payload + 4 * size_t(k), 4);
        if (v != int32_t(i * 31 + k)) {
            return false;
        }
    }
    return true;
}

size_t make_bye(uint8_t* out) {
    header h;
    h.kind = packet_kind::leave;
    h.seq  = 0xffffffffu;
    return encode(h, nullptr, out);
}

/// Sends until the link takes it (a full queue drops: send again after polling).
bool send_reliably(inc_link& l, const uint8_t* p, size_t len, const deadline& until) {
    for (;;) {
        uint64_t dropped = l.stats().send_dropped;
        l.send(p, len);
        if (l.stats().send_dropped == dropped) {
            return true;
        }
        if (!l.alive() || until.expired()) {
            return false;
        }
        sched_yield();
    }
}

// Both sides run this: send packets 0 … n-1 while receiving the peer's 0 … n-1 in order.
// Returns 0, or a code saying what went wrong (the child's exit status).
int exchange(inc_link& l, uint32_t n, double timeout_s) {
    deadline until(timeout_s);
    std::vector<uint8_t> buf(max_packet);
    uint32_t next_out = 0, next_in = 0;
    while (next_out < n || next_in < n) {
        bool busy = false;
        if (next_out < n) {
            size_t len       = make_packet(next_out, buf.data());
            uint64_t dropped = l.stats().send_dropped;
            l.send(buf.data(), len);
            if (l.stats().send_dropped == dropped) {
                ++next_out;
                busy = true;
            }
        }
        const uint8_t* p = nullptr;
        size_t len       = 0;
        // Past the peer's n-th packet stop reading: what follows is its bye (for the caller).
        while (next_in < n && l.recv(&p, &len)) {
            if (!is_packet(p, len, next_in)) {
                return 2;
            }
            ++next_in;
            busy = true;
        }
        if (!l.alive()) {
            return 3;
        }
        if (until.expired()) {
            return 4;
        }
        if (!busy) {
            sched_yield();
        }
    }
    return 0;
}

/// Waits for `pid` to exit (killing it past the deadline); its exit status or -1.
int reap(pid_t pid, double timeout_s) {
    deadline until(timeout_s);
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
        if (until.expired()) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            return -1;
        }
        ::usleep(1000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::unique_ptr<inc_link> accept_within(listener& ls, double timeout_s) {
    deadline until(timeout_s);
    while (!until.expired()) {
        if (auto l = ls.accept()) {
            return l;
        }
        sched_yield();
    }
    return nullptr;
}

std::string unique_shm_name(const char* what) {
    return "shm:test-link-" + std::string(what) + "-" + std::to_string(::getpid());
}

// The child: connect, exchange, then keep polling (which flushes tcp's send buffer) until
// the parent says bye, so nothing it sent is lost by exiting early.
[[noreturn]] void child_exchange(const std::string& address) {
    auto l = connect_link(address, 5);
    if (!l) {
        ::_exit(10);
    }
    int rc = exchange(**l, exchanged, 20);
    if (rc != 0) {
        ::_exit(rc);
    }
    deadline until(10);
    const uint8_t* p = nullptr;
    size_t len       = 0;
    while (!until.expired()) {
        if ((*l)->recv(&p, &len)) {
            header h;
            const uint8_t* payload = nullptr;
            bool bye =
                parse(p, len, &h, &payload) == parse_error::none && h.kind == packet_kind::leave;
            ::_exit(bye ? 0 : 5);
        }
        sched_yield();
    }
    ::_exit(6);
}

void exchange_with_a_child(const std::string& listen_at) {
    auto ls = listen_links(listen_at);
    if (!ls) {
        LOOM_FAIL(ls.error().to_string());
    }
    std::string address = (*ls)->address();
    pid_t pid           = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_exchange(address);
    }
    auto l = accept_within(**ls, 5);
    if (!l) {
        reap(pid, 1);
        LOOM_FAIL("no connection from the child at " + address);
    }
    assert_int_equal(exchange(*l, exchanged, 20), 0);
    assert_int_equal(l->stats().received, exchanged);

    uint8_t bye[max_packet];
    size_t bye_len = make_bye(bye);
    assert_true(send_reliably(*l, bye, bye_len, deadline(5)));
    // Keep polling (flushes the bye) until the child has exited.
    deadline until(10);
    int st     = 0;
    pid_t done = 0;
    const uint8_t* p;
    size_t len;
    while ((done = ::waitpid(pid, &st, WNOHANG)) == 0 && !until.expired()) {
        (void)l->recv(&p, &len);
        sched_yield();
    }
    if (done == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        LOOM_FAIL("the child did not finish");
    }
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    // The child is gone: the link notices within a second.
    double gone_at = now_s();
    while (l->alive() && now_s() - gone_at < 1.0) {
        (void)l->recv(&p, &len);
        sched_yield();
    }
    assert_false(l->alive());
    l->send(bye, bye_len);  // a dead link drops, counted
    assert_true(l->stats().send_dropped > 0);
}

void tcp_exchange_between_processes(void**) {
    exchange_with_a_child("tcp:127.0.0.1:0");
}

void shm_exchange_between_processes(void**) {
    exchange_with_a_child(unique_shm_name("exchange"));
}

// A burst into a peer that does not read: the queue fills, the rest is dropped and counted,
// and send() returns at once all along.
void full_queue_drops(const std::string& listen_at) {
    auto ls = listen_links(listen_at);
    assert_true(ls.is_ok());
    int gate[2];
    assert_int_equal(::pipe(gate), 0);
    pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ::close(gate[1]);
        auto l = connect_link((*ls)->address(), 5);
        char c;
        (void)!::read(gate[0], &c, 1);  // until the parent closes the gate: never reads
        ::_exit(l ? 0 : 10);
    }
    ::close(gate[0]);
    auto l = accept_within(**ls, 5);
    if (!l) {
        ::close(gate[1]);
        reap(pid, 1);
        LOOM_FAIL("no connection from the child");
    }
    std::vector<uint8_t> buf(max_packet);
    size_t len      = make_packet(2048, buf.data());  // 2048 × 37 mod 2049: a large one
    double started  = now_s();
    const int burst = 4000;  // ~33 MB: past any socket buffer and the userspace queue
    for (int i = 0; i < burst; ++i) {
        l->send(buf.data(), len);
    }
    double took = now_s() - started;
    ::close(gate[1]);
    assert_int_equal(reap(pid, 5), 0);
    assert_true(l->stats().send_dropped > 0);
    assert_int_equal(l->stats().sent + l->stats().send_dropped, burst);
    assert_true(took < 2.0);
}

void tcp_full_queue_drops(void**) {
    full_queue_drops("tcp:127.0.0.1:0");
}

void shm_full_queue_drops(void**) {
    full_queue_drops(unique_shm_name("burst"));
}

// A raw socket writes one good frame and then a length no packet has.
void tcp_bad_frame_closes_the_link(void**) {
    auto ls = listen_links("tcp:127.0.0.1:0");
    assert_true(ls.is_ok());
    std::string address = (*ls)->address();
    int port            = std::stoi(address.substr(address.rfind(':') + 1));
    int raw             = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family      = AF_INET;
    sa.sin_port        = htons(uint16_t(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(::connect(raw, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    auto l = accept_within(**ls, 5);
    assert_non_null(l.get());

    std::vector<uint8_t> frame(4 + max_packet);
    size_t len = make_packet(5, frame.data() + 4);
    frame[0] = uint8_t(len >> 24), frame[1] = uint8_t(len >> 16);
    frame[2] = uint8_t(len >> 8), frame[3] = uint8_t(len);
    assert_int_equal(::send(raw, frame.data(), 4 + len, 0), ssize_t(4 + len));
    size_t bad         = max_packet + 1;
    uint8_t bad_pre[8] = {uint8_t(bad >> 24), uint8_t(bad >> 16), uint8_t(bad >> 8), uint8_t(bad)};
    assert_int_equal(::send(raw, bad_pre, sizeof bad_pre, 0), ssize_t(sizeof bad_pre));

    deadline until(2);
    const uint8_t* p;
    size_t got;
    int good = 0;
    while (l->alive() && !until.expired()) {
        if (l->recv(&p, &got)) {
            assert_true(is_packet(p, got, 5));
            ++good;
        } else {
            sched_yield();
        }
    }
    assert_int_equal(good, 1);
    assert_false(l->alive());
    assert_int_equal(l->stats().bad_frames, 1);
    ::close(raw);
}

// lossy_link over a tcp pair in this process (a tcp connect completes in the backlog).
struct tcp_pair {
    std::unique_ptr<listener> ls;
    std::unique_ptr<inc_link> a, b;
};

tcp_pair make_tcp_pair() {
    tcp_pair t;
    auto ls = listen_links("tcp:127.0.0.1:0");
    assert_true(ls.is_ok());
    t.ls   = std::move(*ls);
    auto a = connect_link(t.ls->address(), 5);
    assert_true(a.is_ok());
    t.a = std::move(*a);
    t.b = accept_within(*t.ls, 5);
    assert_non_null(t.b.get());
    return t;
}

/// Drains `l` for `quiet_s` after the last arrival; the seqs that arrived.
std::vector<uint32_t> drain(inc_link& l, double quiet_s) {
    std::vector<uint32_t> seqs;
    double last = now_s();
    const uint8_t* p;
    size_t len;
    while (now_s() - last < quiet_s) {
        if (l.recv(&p, &len)) {
            header h;
            const uint8_t* payload;
            if (parse(p, len, &h, &payload) == parse_error::none) {
                seqs.push_back(h.seq);
            }
            last = now_s();
        } else {
            sched_yield();
        }
    }
    return seqs;
}

void lossy_link_drops_duplicates_and_reorders(void**) {
    std::vector<uint8_t> buf(max_packet);
    {
        auto t     = make_tcp_pair();
        auto lossy = lossy_link(std::move(t.a), 1.0, 0, 0, 1);
        for (uint32_t i = 0; i < 100; ++i) {
            lossy->send(buf.data(), make_packet(i, buf.data()));
        }
        assert_int_equal(lossy->stats().sent, 0);
        assert_true(drain(*t.b, 0.2).empty());
    }
    {
        auto t     = make_tcp_pair();
        auto lossy = lossy_link(std::move(t.a), 0, 1.0, 0, 2);
        for (uint32_t i = 0; i < 100; ++i) {
            lossy->send(buf.data(), make_packet(i, buf.data()));
        }
        auto seqs = drain(*t.b, 0.2);
        assert_int_equal(seqs.size(), 200);
        for (uint32_t i = 0; i < 200; ++i) {
            assert_int_equal(seqs[i], i / 2);
        }
        assert_int_equal(lossy->stats().sent, 200);
    }
    {
        // reorder = 1: every packet that finds the buffer empty waits for the next one.
        auto t     = make_tcp_pair();
        auto lossy = lossy_link(std::move(t.a), 0, 0, 1.0, 3);
        for (uint32_t i = 0; i < 5; ++i) {
            lossy->send(buf.data(), make_packet(i, buf.data()));
        }
        const uint8_t* p;
        size_t len;
        (void)lossy->recv(&p, &len);  // flushes the held packet 4
        auto seqs = drain(*t.b, 0.2);
        assert_true((seqs == std::vector<uint32_t>{1, 0, 3, 2, 4}));
    }
}

void connect_to_nobody_times_out_naming_the_address(void**) {
    // A port that was free a moment ago (listen on port 0, then close).
    std::string tcp_address;
    {
        auto ls = listen_links("tcp:127.0.0.1:0");
        assert_true(ls.is_ok());
        tcp_address = (*ls)->address();
    }
    for (const std::string& address : {tcp_address, unique_shm_name("nobody")}) {
        double started = now_s();
        auto l         = connect_link(address, 0.3);
        double took    = now_s() - started;
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_TIMEOUT);
        assert_non_null(std::strstr(l.error().message().c_str(), address.c_str()));
        assert_true(took >= 0.25 && took < 2.0);
    }
}

void bad_addresses_are_refused_clearly(void**) {
    for (const char* address : {"udp:127.0.0.1:7000", "127.0.0.1:7000", ""}) {
        auto l = connect_link(address, 1);
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        assert_non_null(std::strstr(l.error().message().c_str(), "tcp:HOST:PORT"));
        assert_non_null(std::strstr(l.error().message().c_str(), "shm:NAME"));
        auto ls = listen_links(address);
        assert_false(ls.is_ok());
        assert_int_equal(ls.error().code(), LOOM_ERR_INVALID_ARGUMENT);
    }
    for (const char* address : {"tcp:127.0.0.1", "tcp:127.0.0.1:99999", "shm:"}) {
        auto l = connect_link(address, 1);
        assert_false(l.is_ok());
        assert_int_equal(l.error().code(), LOOM_ERR_INVALID_ARGUMENT);
        assert_non_null(std::strstr(l.error().message().c_str(), address));
    }
}

}  // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(tcp_exchange_between_processes),
        cmocka_unit_test(shm_exchange_between_processes),
        cmocka_unit_test(tcp_full_queue_drops),
        cmocka_unit_test(shm_full_queue_drops),
        cmocka_unit_test(tcp_bad_frame_closes_the_link),
        cmocka_unit_test(lossy_link_drops_duplicates_and_reorders),
        cmocka_unit_test(connect_to_nobody_times_out_naming_the_address),
        cmocka_unit_test(bad_addresses_are_refused_clearly),
    };
    return LOOM_RUN_TESTS("inc_link", tests);
}
