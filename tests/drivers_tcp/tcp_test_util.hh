// SPDX-License-Identifier: Apache-2.0
// Helpers for the tcp and fault driver tests and the endpoint contract: open and connect tcp
// for one forked rank, find the tcp endpoint inside a fault wrapper, post with retry on
// NO_RESOURCE, and count completions per cookie so "exactly once" is checked, not assumed.
// Forking, waiting and buffer patterns come from tests/drivers/driver_test_util.hh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../drivers/driver_test_util.hh"
#include "base/hash.hh"
#include "base/params.hh"
#include "drivers/fault/fault.hh"
#include "drivers/tcp/tcp.hh"

namespace loom::test {

/// Every tcp test runs over real sockets on 127.0.0.1, whatever interfaces the host has.
inline void use_loopback() {
    (void)params::registry::global().set("LOOM_TCP_ADDR", "127.0.0.1");
}

/// Opens tcp for `rank` and connects it.
inline result<std::unique_ptr<drivers::endpoint>> open_tcp(int rank, int size,
                                                           const std::string& job, kv_store* store,
                                                           double timeout_s = 20) {
    return connected(drivers::open_tcp(config_of(rank, size, job, store, timeout_s)));
}

/// The tcp endpoint inside `ep` (itself, or the one a fault wrapper holds).
inline drivers::tcp::tcp_endpoint* tcp_of(drivers::endpoint& ep) {
    drivers::endpoint* inner = drivers::fault::inner_of(ep);
    return dynamic_cast<drivers::tcp::tcp_endpoint*>(inner != nullptr ? inner : &ep);
}

/// Completions seen per cookie, to check that every operation completes exactly once.
struct tally {
    explicit tally(size_t n) : count(n, 0), status(n, LOOM_SUCCESS), last(n) {}
    std::vector<int> count;
    std::vector<loom_status_t> status;
    std::vector<drivers::completion> last;
    std::vector<drivers::completion> notices;  // unsolicited control notices
    size_t done = 0, extra = 0;                // first completions; second (or unknown-cookie) ones

    void add(const drivers::completion& c) {
        if (c.cookie == drivers::control_cookie) {
            notices.push_back(c);
            return;
        }
        if (c.cookie >= count.size() || count[c.cookie]++ > 0) {
            ++extra;
            return;
        }
        status[c.cookie] = c.status;
        last[c.cookie]   = c;
        ++done;
    }
    /// Polls once (up to 64 completions), counting what came; how many came.
    int poll(const drivers::fast_path& f, int max = 64) {
        drivers::completion c[64];
        int n = f.poll(f.ctx, c, max < 64 ? max : 64);
        for (int i = 0; i < n; ++i) {
            add(c[i]);
        }
        return n;
    }
    /// Polls until `want` cookies completed once or the deadline passes.
    bool wait(const drivers::fast_path& f, size_t want, double timeout_s) {
        deadline until(timeout_s);
        backoff idle;
        while (done < want && !until.expired()) {
            poll(f) > 0 ? idle.reset() : idle.idle();
        }
        return done >= want;
    }
    /// Polls until `key` is in the store or `timeout_s` passes; false then.
    bool poll_until(const drivers::fast_path& f, kv_store& store, const std::string& key,
                    double timeout_s) {
        deadline until(timeout_s);
        while (!store.get(key, 0).is_ok()) {
            if (until.expired()) {
                return false;
            }
            if (poll(f, 16) == 0) {
                ::usleep(200);
            }
        }
        return true;
    }
    /// The end of a body: says this rank is done, polls until the other ranks of `size` are
    /// too (so none closes under another), then lets stray completions come for 50 ms.
    bool finish(const drivers::fast_path& f, kv_store& store, int rank, int size = 2) {
        if (!store.set("done/" + std::to_string(rank), "1").is_ok()) {
            return false;
        }
        for (int p = 0; p < size; ++p) {
            if (p != rank && !poll_until(f, store, "done/" + std::to_string(p), 30)) {
                return false;
            }
        }
        poll_for(f, 0.05, [&](const drivers::completion& c) { add(c); });
        return true;
    }
};

/// Posts with `post` (a send or a receive), polling (into `t`) while the driver answers
/// NO_RESOURCE.
template <class Post>
loom_status_t post_retry(const drivers::fast_path& f, tally& t, double timeout_s, Post post) {
    deadline until(timeout_s);
    for (;;) {
        loom_status_t st = post();
        if (st != LOOM_ERR_NO_RESOURCE || until.expired()) {
            return st;
        }
        t.poll(f);
    }
}

inline loom_status_t send_retry(const drivers::fast_path& f, tally& t, int peer, uint64_t tag,
                                uint64_t imm, const void* buf, size_t len, uint64_t cookie,
                                double timeout_s = 20) {
    return post_retry(f, t, timeout_s,
                      [&] { return f.post_send(f.ctx, peer, tag, imm, buf, len, cookie); });
}

inline loom_status_t recv_retry(const drivers::fast_path& f, tally& t, int peer, uint64_t tag,
                                uint64_t imm, void* buf, size_t len, uint64_t cookie,
                                double timeout_s = 20) {
    return post_retry(f, t, timeout_s,
                      [&] { return f.post_recv(f.ctx, peer, tag, imm, buf, len, cookie); });
}

/// A deterministic generator (a splitmix64 stream) for shuffles and sizes (seeds are printed
/// by the tests).
struct rng : splitmix_stream {
    using splitmix_stream::splitmix_stream;
    template <class T>
    void shuffle(std::vector<T>& v) {
        for (size_t i = v.size(); i > 1; --i) {
            std::swap(v[i - 1], v[next() % i]);
        }
    }
};

}  // namespace loom::test
