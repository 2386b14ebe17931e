// SPDX-License-Identifier: Apache-2.0
// The program the loomrun and bootstrap tests launch as every rank. Modes:
//   print            two stdout lines and one stderr line naming the rank
//   env              the LOOM_* variables loomrun set
//   exit-at K CODE   rank K exits CODE after 0.2 s; the others wait 30 s (to be ended)
//   kill-at K        rank K dies of SIGKILL; the others ignore SIGTERM (SIGKILL ends them)
//   sleep S          sleeps S seconds
//   ready            prints "ready" and sleeps 30 s (the test signals loomrun)
//   store            discover() + connect_store(): every rank publishes a key, reads all
//   netns-tcp        store, then every rank > 0 opens a TCP connection to rank 0's
//                    LOOM_TCP_ADDR and says hello; rank 0 prints what it received; each
//                    rank says whether /sys/class/net shows its namespace's eth0
// Ranks that wait print "pid=<pid>" first, so a test can check they were ended.
// The probe reads LOOM_RANK etc. with getenv on purpose: it checks what loomrun exported,
// not what the registry makes of it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bootstrap/bootstrap.hh"

namespace {

int env_int(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : -1;
}

std::string env_str(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "(unset)";
}

int wait_a_while(int seconds) {
    std::printf("pid=%d\n", getpid());
    std::fflush(stdout);
    sleep(static_cast<unsigned>(seconds));
    return 0;
}

// Publishes "hello/<rank>", waits for every rank's, prints a summary. Returns the store.
std::unique_ptr<loom::kv_store> exchange(loom::bootstrap::identity* me) {
    auto id = loom::bootstrap::discover();
    if (!id) {
        std::fprintf(stderr, "discover: %s\n", id.error().to_string().c_str());
        std::exit(1);
    }
    *me        = *id;
    auto store = loom::bootstrap::connect_store(*me);
    if (!store) {
        std::fprintf(stderr, "connect_store: %s\n", store.error().to_string().c_str());
        std::exit(1);
    }
    auto& s = **store;
    if (auto st = s.set("hello/" + std::to_string(me->rank), "from-" + std::to_string(me->rank));
        !st) {
        std::fprintf(stderr, "set: %s\n", st.to_string().c_str());
        std::exit(1);
    }
    for (int r = 0; r < me->size; ++r) {
        auto v = s.get("hello/" + std::to_string(r), me->timeout_s);
        if (!v || *v != "from-" + std::to_string(r)) {
            std::fprintf(stderr, "get: %s\n", v ? v->c_str() : v.error().to_string().c_str());
            std::exit(1);
        }
    }
    std::printf("store ok rank %d of %d source %s job %s via %s\n", me->rank, me->size,
                me->source.c_str(), me->job.c_str(), me->bootstrap.c_str());
    std::fflush(stdout);
    return std::move(*store);
}

sockaddr_in ipv4(const std::string& host, int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port   = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    return a;
}

// Rank 0 listens on its own address; the others connect to it, told where by the store.
int netns_tcp() {
    constexpr int port = 29600;
    loom::bootstrap::identity me;
    auto store     = exchange(&me);
    std::string my = env_str("LOOM_TCP_ADDR");
    // loomrun mounts the namespace's own /sys, as `ip netns exec` does.
    std::printf("sysfs %s\n",
                access("/sys/class/net/eth0", F_OK) == 0 ? "shows eth0" : "lacks eth0");
    if (me.rank == 0) {
        int fd        = socket(AF_INET, SOCK_STREAM, 0);
        int one       = 1;
        sockaddr_in a = ipv4(my, port);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0) {
            std::fprintf(stderr, "listen on %s: %s\n", my.c_str(), std::strerror(errno));
            return 1;
        }
        (void)store->set("listening", my);
        for (int k = 1; k < me.size; ++k) {
            sockaddr_in peer{};
            socklen_t len              = sizeof peer;
            int c                      = accept(fd, reinterpret_cast<sockaddr*>(&peer), &len);
            char buf[128]              = {};
            ssize_t n                  = c >= 0 ? read(c, buf, sizeof buf - 1) : -1;
            char from[INET_ADDRSTRLEN] = {};
            inet_ntop(AF_INET, &peer.sin_addr, from, sizeof from);
            std::printf("received '%s' from %s\n", n > 0 ? buf : "", from);
            close(c);
        }
        close(fd);
        return 0;
    }
    auto where = store->get("listening", me.timeout_s);
    if (!where) {
        std::fprintf(stderr, "%s\n", where.error().to_string().c_str());
        return 1;
    }
    int fd        = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = ipv4(*where, port);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        std::fprintf(stderr, "connect to %s: %s\n", where->c_str(), std::strerror(errno));
        return 1;
    }
    std::string hello = "hello from " + my;
    (void)!write(fd, hello.data(), hello.size());
    close(fd);
    std::printf("sent '%s' to %s\n", hello.c_str(), where->c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "";
    int rank         = env_int("LOOM_RANK");
    if (mode == "print") {
        std::printf("hello from %d of %d\nsecond line %d\n", rank, env_int("LOOM_SIZE"), rank);
        std::fprintf(stderr, "note from %d\n", rank);
        return 0;
    }
    if (mode == "env") {
        std::printf("env rank=%d size=%d job=%s bootstrap=%s transport=%s tcp_addr=%s\n", rank,
                    env_int("LOOM_SIZE"), env_str("LOOM_JOB").c_str(),
                    env_str("LOOM_BOOTSTRAP").c_str(), env_str("LOOM_TRANSPORT").c_str(),
                    env_str("LOOM_TCP_ADDR").c_str());
        return 0;
    }
    if (mode == "exit-at" && argc > 3) {
        if (rank == std::atoi(argv[2])) {
            usleep(200000);
            return std::atoi(argv[3]);
        }
        return wait_a_while(30);
    }
    if (mode == "kill-at" && argc > 2) {
        if (rank == std::atoi(argv[2])) {
            usleep(200000);
            raise(SIGKILL);
        }
        signal(SIGTERM, SIG_IGN);  // only the SIGKILL after the grace period ends these
        return wait_a_while(30);
    }
    if (mode == "sleep" && argc > 2) {
        return wait_a_while(std::atoi(argv[2]));
    }
    if (mode == "ready") {
        std::printf("ready\n");
        return wait_a_while(30);
    }
    if (mode == "store") {
        loom::bootstrap::identity me;
        auto store = exchange(&me);
        return 0;
    }
    if (mode == "netns-tcp") {
        return netns_tcp();
    }
    std::fprintf(stderr,
                 "usage: loomrun_probe print|env|exit-at K CODE|kill-at K|sleep S|ready|"
                 "store|netns-tcp\n");
    return 2;
}
