// SPDX-License-Identifier: Apache-2.0
// tools/loom-dpu against malformed frames: two loom-dpu processes (ring:2, two ranks per
// node) route a reliable job between rank 0 (node 0) and rank 2 (node 1), while a
// stranger on rank 1's host port of node 0 injects frames of every kind the router must
// refuse: a bad EtherType, a runt, a truncated reliable frame, a bad header, an unknown
// destination rank and a forged source. Each must be dropped and counted under its cause
// (the DPU's dpu-drops line at exit), and the job beside them must deliver every byte.
//
// Processes: the DPUs are exec'd (argv[2] is loom-dpu's path); the two ranks and the
// injector are forked before any DPDK call here, each starting its own EAL.
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hh"
#include "dpdk_test_util.hh"
#include "driver_test_util.hh"
#include "drivers/dpdk/dpdk_eal.hh"
#include "drivers/dpdk/dpdk_frame.hh"
#include "drivers/dpdk/dpdk_link.hh"
#include "drivers/reliable/reliable.hh"
#include "drivers/reliable/reliable_wire.hh"
#include "file_store.hh"
#include "test_case.hh"

using namespace loom;
using namespace loom::drivers::dpdk;
namespace rel = loom::drivers::reliable;

// cmocka's assert_true, saying why first.
#define ASSERT_MSG(cond, ...)                  \
    do {                                       \
        if (!(cond)) {                         \
            std::fprintf(stderr, __VA_ARGS__); \
            std::fprintf(stderr, "\n");        \
        }                                      \
        assert_true(cond);                     \
    } while (0)

namespace {

const char* dpu_program = "loom-dpu";
constexpr int each      = 10;  // frames of each malformed kind
constexpr int messages  = 64;  // messages of the job beside them

std::unique_ptr<port> open_client(const std::string& socket) {
    port_config pc;
    pc.device         = memif_vdev(unique_name("net_memif"), socket, false, 0, false);
    pc.retry_start    = true;
    pc.link_timeout_s = 20;
    auto p            = port::open(pc);
    if (!p) {
        std::fprintf(stderr, "port %s: %s\n", socket.c_str(), p.error().message().c_str());
        return nullptr;
    }
    return std::move(*p);
}

// A rank (0 or 2) of a 4-rank job whose other ranks are absent: a reliable endpoint over
// its DPU host port; rank 0 sends `messages` messages of growing size, rank 2 checks them.
int run_rank(int rank, const std::string& dir) {
    auto p = open_client(dir + "/h" + std::to_string(rank) + ".sock");
    RANK_CHECK(rank, p != nullptr, "host port");
    auto link = std::make_unique<eth_link>(std::move(p));
    RANK_CHECK(rank, link->send_hello(), "hello");
    std::vector<std::unique_ptr<drivers::common::frame_link>> links;
    links.push_back(std::move(link));
    test::file_store store(dir + "/store");
    auto cfg            = test::config_of(rank, 4, "dpu-router-test", &store, 20);
    int peer            = rank == 0 ? 2 : 0;
    cfg.peers           = {peer};
    std::vector<int> of = {-1, -1, -1, -1};
    of[size_t(peer)]    = 0;
    auto opts           = rel::options_from_params();
    RANK_CHECK(rank, bool(opts), "options");
    auto ep = test::connected(rel::open_reliable(cfg, std::move(links), of, *opts));
    RANK_CHECK(rank, bool(ep), "endpoint: %s", ep ? "" : ep.error().message().c_str());
    const drivers::fast_path& fp = (*ep)->fast();
    std::vector<std::vector<uint8_t>> bufs(messages);
    for (int m = 0; m < messages; ++m) {
        size_t n = size_t(m) * 997 + 1;
        bufs[size_t(m)].assign(n, 0);
        if (rank == 0) {
            for (size_t i = 0; i < n; ++i) {
                bufs[size_t(m)][i] = uint8_t(i * 13 + size_t(m));
            }
            RANK_CHECK(rank,
                       fp.post_send(fp.ctx, peer, uint64_t(m + 1), 0, bufs[size_t(m)].data(), n,
                                    uint64_t(m)) == LOOM_SUCCESS,
                       "send %d", m);
        } else {
            RANK_CHECK(rank,
                       fp.post_recv(fp.ctx, peer, uint64_t(m + 1), 0, bufs[size_t(m)].data(), n,
                                    uint64_t(m)) == LOOM_SUCCESS,
                       "recv %d", m);
        }
    }
    std::vector<drivers::completion> done(messages);
    int got = test::wait_completions(fp, done.data(), messages, 60);
    RANK_CHECK(rank, got == messages, "%d of %d completions", got, messages);
    for (int k = 0; k < got; ++k) {
        RANK_CHECK(rank, done[size_t(k)].status == LOOM_SUCCESS, "completion %d", k);
    }
    if (rank == 2) {
        for (int m = 0; m < messages; ++m) {
            for (size_t i = 0; i < bufs[size_t(m)].size(); ++i) {
                RANK_CHECK(rank, bufs[size_t(m)][i] == uint8_t(i * 13 + size_t(m)),
                           "message %d byte %zu", m, i);
            }
        }
    }
    (*ep)->close();
    return 0;
}

// Raw bytes as one frame: `len` bytes of `bytes` from the Ethernet header on.
bool send_raw(port& p, const uint8_t* bytes, size_t len) {
    rte_mbuf* m = rte_pktmbuf_alloc(p.pool());
    if (m == nullptr) {
        return false;
    }
    auto* at = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(len)));
    std::memcpy(at, bytes, len);
    deadline until(5);
    while (rte_eth_tx_burst(p.id(), 0, &m, 1) != 1) {
        if (until.expired()) {
            rte_pktmbuf_free(m);
            return false;
        }
    }
    return true;
}

// A whole, sealed reliable data frame from `src` to `dst` behind an Ethernet header.
std::vector<uint8_t> reliable_frame(uint32_t src, uint32_t dst, uint16_t ether_type) {
    std::vector<uint8_t> f(eth_header + rel::header_bytes + 16, 0xab);
    rte_ether_addr all;
    std::memset(&all, 0xff, sizeof all);
    write_eth_header(f.data(), all, all, ether_type);
    rel::header h;
    h.kind = uint8_t(rel::frame_kind::data);
    h.body = 16;
    h.src  = src;
    h.dst  = dst;
    rel::encode(h, f.data() + eth_header);
    rel::seal(f.data() + eth_header, rel::crc32c(0, f.data() + eth_header + rel::header_bytes, 16));
    return f;
}

// The stranger on rank 1's host port of node 0: `each` frames of every malformed kind.
int run_injector(const std::string& dir) {
    auto p = open_client(dir + "/h1.sock");
    RANK_CHECK(1, p != nullptr, "host port");
    std::vector<uint8_t> bad_type  = reliable_frame(1, 2, 0x0800);
    std::vector<uint8_t> truncated = reliable_frame(1, 2, loom_ethertype);
    std::vector<uint8_t> bad_head  = reliable_frame(1, 2, loom_ethertype);
    bad_head[eth_header]           = 0;  // magic
    std::vector<uint8_t> unknown   = reliable_frame(1, 99, loom_ethertype);
    std::vector<uint8_t> forged    = reliable_frame(3, 2, loom_ethertype);
    for (int k = 0; k < each; ++k) {
        RANK_CHECK(1, send_raw(*p, bad_type.data(), bad_type.size()), "bad type");
        RANK_CHECK(1, send_raw(*p, bad_type.data(), 10), "runt");
        RANK_CHECK(1, send_raw(*p, truncated.data(), eth_header + 50), "truncated");
        RANK_CHECK(1, send_raw(*p, bad_head.data(), bad_head.size()), "bad header");
        RANK_CHECK(1, send_raw(*p, unknown.data(), unknown.size()), "unknown");
        RANK_CHECK(1, send_raw(*p, forged.data(), forged.size()), "forged");
    }
    // Linger so the DPU reads everything before this port goes away.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return 0;
}

pid_t spawn_dpu(int node, const std::string& dir) {
    pid_t pid = fork();
    if (pid == 0) {
        std::string out = dir + "/dpu-" + std::to_string(node) + ".out";
        FILE* f         = std::freopen(out.c_str(), "w", stdout);
        (void)f;
        std::string n = std::to_string(node);
        execl(dpu_program, dpu_program, "--node", n.c_str(), "--fabric", "ring:2",
              "--ranks-per-node", "2", "--dir", dir.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    return pid;
}

template <class F>
pid_t spawn(F&& body) {
    pid_t pid = fork();
    if (pid == 0) {
        _exit(body());
    }
    return pid;
}

bool wait_file(const std::string& path, double timeout_s) {
    deadline until(timeout_s);
    struct stat st {};
    while (stat(path.c_str(), &st) != 0) {
        if (until.expired()) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

int exit_of(pid_t pid, double timeout_s) {
    deadline until(timeout_s);
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (until.expired()) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// The number after " name=" on the line starting with `prefix` in `text`; -1 when absent.
long counter(const std::string& text, const std::string& prefix, const std::string& name) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) == 0) {
            size_t at = line.find(" " + name + "=");
            return at == std::string::npos ? -1 : std::stol(line.substr(at + name.size() + 2));
        }
    }
    return -1;
}

void malformed_frames_are_dropped_and_counted(void**) {
    char templ[] = "/tmp/loom-dpu-test-XXXXXX";
    assert_true(mkdtemp(templ) != nullptr);
    std::string dir = templ;
    mkdir((dir + "/store").c_str(), 0700);
    pid_t dpu0 = spawn_dpu(0, dir), dpu1 = spawn_dpu(1, dir);
    assert_true(wait_file(dir + "/node-0.ready", 30) && wait_file(dir + "/node-1.ready", 30));
    pid_t r0 = spawn([&] { return run_rank(0, dir); });
    pid_t r2 = spawn([&] { return run_rank(2, dir); });
    pid_t in = spawn([&] { return run_injector(dir); });
    int e_in = exit_of(in, 60), e0 = exit_of(r0, 90), e2 = exit_of(r2, 90);
    kill(dpu0, SIGTERM);
    kill(dpu1, SIGTERM);
    int d0 = exit_of(dpu0, 10), d1 = exit_of(dpu1, 10);
    std::ifstream f(dir + "/dpu-0.out");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::printf("# %s", text.c_str());
    ASSERT_MSG(e_in == 0 && e0 == 0 && e2 == 0, "injector %d, rank 0 %d, rank 2 %d", e_in, e0, e2);
    ASSERT_MSG(d0 == 0 && d1 == 0, "the DPUs exited %d and %d on SIGTERM", d0, d1);
    // Rank 1's host port of node 0 is port 3 (ring:2: one torus port 0, host ports 2 and 3).
    const std::string line = "dpu-drops node=0 port=3 ";
    for (const char* cause :
         {"bad_type", "runt", "truncated", "bad_header", "unknown_dst", "forged"}) {
        long n = counter(text, line, cause);
        ASSERT_MSG(n == each, "%s: %ld drops counted, %d injected", cause, n, each);
    }
    for (const char* port : {"dpu-drops node=0 port=0 ", "dpu-drops node=0 port=2 "}) {
        for (const char* cause :
             {"bad_type", "runt", "truncated", "bad_header", "unknown_dst", "forged"}) {
            ASSERT_MSG(counter(text, port, cause) == 0, "%s%s is not 0", port, cause);
        }
    }
    std::system(("rm -rf " + dir).c_str());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 2) {
        dpu_program = argv[2];
    }
    const CMUnitTest cases[] = {cmocka_unit_test(malformed_frames_are_dropped_and_counted)};
    return loom::test::dpdk::run_named_case("dpu_router", cases, 1, argc < 2 ? argc : 2, argv);
}
