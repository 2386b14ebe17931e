// SPDX-License-Identifier: Apache-2.0
// The datagram endpoints' checks (drivers/datagram.hh) that every transport runs: frames of
// every size exchanged with a forked child and checked on arrival, in order; a burst the peer
// does not read dropped and counted; a frame over the maximum refused. test_datagram.cc runs
// them over tcp and shm, test_ofi_datagram.cc over libfabric's providers.
//
// Every wait has a deadline, and idle poll loops yield (the test machines may have 2 cores).
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "base/byte_order.hh"
#include "base/clock.hh"
#include "drivers/datagram.hh"
#include "test_case.hh"
#include "value_or_fail.hh"

namespace loom::test::datagram {

using drivers::datagram_endpoint;
using drivers::datagram_listener;
using drivers::datagram_max_frame;

constexpr size_t max_packet = datagram_max_frame;
constexpr int exchanged     = 2000;
constexpr uint32_t bye_seq  = 0xffffffffu;

// Frame i: its seq, then 8 + (i × 37) mod (max - 7) bytes in all (8 … max), byte k past the
// seq holding i × 31 + k, so any mix-up of frames or bytes shows.
inline size_t make_packet(uint32_t i, uint8_t* out) {
    size_t len = 8 + (size_t(i) * 37) % (max_packet - 7);
    be::put32(out, i);
    be::put32(out + 4, uint32_t(len));
    for (size_t k = 8; k < len; ++k) {
        out[k] = uint8_t(i * 31 + k);
    }
    return len;
}

/// The seq of a frame, or bye_seq for anything too short to carry one.
inline uint32_t seq_of(const uint8_t* p, size_t len) {
    return len >= 8 ? be::get32(p) : bye_seq;
}

/// True when `p` is make_packet(i)'s frame, intact.
inline bool is_packet(const uint8_t* p, size_t len, uint32_t i) {
    if (len < 8 || be::get32(p) != i || be::get32(p + 4) != len ||
        len != 8 + (size_t(i) * 37) % (max_packet - 7)) {
        return false;
    }
    for (size_t k = 8; k < len; ++k) {
        if (p[k] != uint8_t(i * 31 + k)) {
            return false;
        }
    }
    return true;
}

inline size_t make_bye(uint8_t* out) {
    be::put32(out, bye_seq);
    be::put32(out + 4, 8);
    return 8;
}

/// Sends once; false when the link dropped the frame (a full queue).
inline bool try_send(datagram_endpoint& l, const uint8_t* p, size_t len) {
    uint64_t dropped = l.stats().send_dropped;
    l.send(p, len);
    return l.stats().send_dropped == dropped;
}

/// Sends until the link takes it (a full queue drops: send again after polling).
inline bool send_reliably(datagram_endpoint& l, const uint8_t* p, size_t len,
                          const deadline& until) {
    for (;;) {
        if (try_send(l, p, len)) {
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
inline int exchange(datagram_endpoint& l, uint32_t n, double timeout_s) {
    deadline until(timeout_s);
    std::vector<uint8_t> buf(max_packet);
    uint32_t next_out = 0, next_in = 0;
    while (next_out < n || next_in < n) {
        bool busy = false;
        if (next_out < n && try_send(l, buf.data(), make_packet(next_out, buf.data()))) {
            ++next_out;
            busy = true;
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

/// Waits for `pid` to exit (killing it past the deadline), running `meanwhile` between
/// looks; its exit status or -1.
template <class Meanwhile>
int reap(pid_t pid, double timeout_s, Meanwhile meanwhile) {
    deadline until(timeout_s);
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
        if (until.expired()) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            return -1;
        }
        meanwhile();
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

inline int reap(pid_t pid, double timeout_s) {
    return reap(pid, timeout_s, [] { ::usleep(1000); });
}

inline std::unique_ptr<datagram_endpoint> accept_within(datagram_listener& ls, double timeout_s) {
    deadline until(timeout_s);
    while (!until.expired()) {
        if (auto l = ls.accept()) {
            return l;
        }
        sched_yield();
    }
    return nullptr;
}

inline std::string unique_shm_name(const char* what) {
    return "shm:test-datagram-" + std::string(what) + "-" + std::to_string(::getpid());
}

// The child: connect, exchange, then keep polling (which flushes tcp's send buffer) until
// the parent says bye, so nothing it sent is lost by exiting early.
[[noreturn]] inline void child_exchange(const std::string& address) {
    auto l = drivers::connect_datagram(address, 5);
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
            ::_exit(seq_of(p, len) == bye_seq ? 0 : 5);
        }
        sched_yield();
    }
    ::_exit(6);
}

inline void exchange_with_a_child(const std::string& listen_at, double gone_within_s = 1.0) {
    auto ls             = test::value_or_fail(drivers::listen_datagram(listen_at));
    std::string address = ls->address();
    pid_t pid           = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        child_exchange(address);
    }
    auto l = accept_within(*ls, 5);
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
    const uint8_t* p;
    size_t len;
    int child = reap(pid, 10, [&] {
        (void)l->recv(&p, &len);
        sched_yield();
    });
    if (child < 0) {
        LOOM_FAIL("the child did not finish");
    }
    assert_int_equal(child, 0);

    // The child is gone: the link notices within a second (ofi: within its idle timeout).
    double gone_at = now_s();
    while (l->alive() && now_s() - gone_at < gone_within_s) {
        (void)l->recv(&p, &len);
        sched_yield();
    }
    assert_false(l->alive());
    l->send(bye, bye_len);  // a dead link drops, counted
    assert_true(l->stats().send_dropped > 0);
}

// A burst into a peer that does not read: the queue fills, the rest is dropped and counted,
// and send() returns at once all along.
inline void full_queue_drops(const std::string& listen_at) {
    auto ls = drivers::listen_datagram(listen_at);
    assert_true(ls.is_ok());
    int gate[2];
    assert_int_equal(::pipe(gate), 0);
    pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ::close(gate[1]);
        auto l = drivers::connect_datagram((*ls)->address(), 5);
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

// A connected pair in this process: the connect runs on a thread, since an shm connect waits
// for the listener's accept.
struct endpoint_pair {
    std::unique_ptr<datagram_listener> ls;
    std::unique_ptr<datagram_endpoint> a, b;
};

inline endpoint_pair make_pair_at(const std::string& listen_at, const std::string& prefix = "") {
    endpoint_pair t;
    auto ls = drivers::listen_datagram(listen_at);
    assert_true(ls.is_ok());
    t.ls                                         = std::move(*ls);
    result<std::unique_ptr<datagram_endpoint>> a = status(LOOM_ERR_INTERNAL, "not run");
    std::thread connecting([&] { a = drivers::connect_datagram(prefix + t.ls->address(), 5); });
    t.b = accept_within(*t.ls, 5);
    connecting.join();
    t.a = test::value_or_fail(std::move(a));
    assert_non_null(t.b.get());
    return t;
}

/// Sends frames 0 … n-1 (make_packet) once each.
inline void send_packets(datagram_endpoint& l, uint32_t n) {
    std::vector<uint8_t> buf(max_packet);
    for (uint32_t i = 0; i < n; ++i) {
        l.send(buf.data(), make_packet(i, buf.data()));
    }
}

/// Drains `l` for `quiet_s` after the last arrival; the seqs that arrived.
inline std::vector<uint32_t> drain(datagram_endpoint& l, double quiet_s) {
    std::vector<uint32_t> seqs;
    double last = now_s();
    const uint8_t* p;
    size_t len;
    while (now_s() - last < quiet_s) {
        if (l.recv(&p, &len)) {
            seqs.push_back(seq_of(p, len));
            last = now_s();
        } else {
            sched_yield();
        }
    }
    return seqs;
}

// A frame over the maximum is refused (counted, nothing sent); the next one goes as usual.
inline void oversize_frames_are_refused(const std::string& listen_at) {
    auto t = make_pair_at(listen_at);
    std::vector<uint8_t> buf(max_packet + 1);
    t.a->send(buf.data(), max_packet + 1);
    assert_int_equal(t.a->stats().send_dropped, 1);
    assert_int_equal(t.a->stats().sent, 0);
    size_t len = make_packet(3, buf.data());
    t.a->send(buf.data(), len);
    deadline until(5);
    const uint8_t* p = nullptr;
    size_t got       = 0;
    while (!t.b->recv(&p, &got) && !until.expired()) {
        sched_yield();
    }
    assert_true(is_packet(p, got, 3));
    assert_true(drain(*t.b, 0.1).empty());
    assert_int_equal(t.b->stats().bad_frames, 0);
}

/// The seqs that arrive when 100 frames go through a fault wrapper with every fault at
}  // namespace loom::test::datagram
