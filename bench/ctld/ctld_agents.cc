// SPDX-License-Identifier: Apache-2.0
// ctld-agents: the control plane at scale, as a benchmark program. One process plays many
// agents against a running loom-ctld: every agent joins (timed from the first join to the
// last answer), then each heartbeats once per period, spread evenly over the period, for
// the duration; every heartbeat's round trip is timed. With --pid (loom-ctld's process) it
// reads the controller's CPU time and memory from /proc over the heartbeat phase. Prints
// the figures; exit 1 when a join or heartbeat was refused or the table does not end with
// every agent up. bench/ctld/run.sh starts loom-ctld and runs it
// (docs/performance.md#control-plane).
//
//   ctld-agents --controller HOST:PORT --token-file F [--agents 4096] [--connections 8]
//               [--period 1] [--duration 60] [--pid PID]
#include <httplib.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using json       = nlohmann::json;

struct options {
    std::string host = "127.0.0.1";
    int port         = 0;
    std::string token;
    int agents        = 4096;
    int connections   = 8;
    double period_s   = 1;
    double duration_s = 60;
    long pid          = 0;
};

struct agent {
    uint64_t id = 0;
    std::string lease;
};

[[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "ctld-agents: %s\n", why.c_str());
    std::exit(2);
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value    = [&]() -> std::string {
            if (i + 1 >= argc) {
                die(a + " needs a value");
            }
            return argv[++i];
        };
        if (a == "--controller") {
            std::string c = value();
            size_t colon  = c.rfind(':');
            if (colon == std::string::npos) {
                die("--controller HOST:PORT");
            }
            o.host = c.substr(0, colon);
            o.port = std::atoi(c.c_str() + colon + 1);
        } else if (a == "--token-file") {
            std::ifstream f(value());
            std::getline(f, o.token);
            if (o.token.empty()) {
                die("cannot read the token file");
            }
        } else if (a == "--agents") {
            o.agents = std::atoi(value().c_str());
        } else if (a == "--connections") {
            o.connections = std::atoi(value().c_str());
        } else if (a == "--period") {
            o.period_s = std::atof(value().c_str());
        } else if (a == "--duration") {
            o.duration_s = std::atof(value().c_str());
        } else if (a == "--pid") {
            o.pid = std::atol(value().c_str());
        } else {
            die("unknown argument " + a);
        }
    }
    if (o.port <= 0 || o.token.empty() || o.agents < 1 || o.connections < 1 || o.period_s <= 0) {
        die("usage: ctld-agents --controller HOST:PORT --token-file F [--agents N] "
            "[--connections C] [--period S] [--duration S] [--pid PID]");
    }
    return o;
}

std::unique_ptr<httplib::Client> client(const options& o) {
    auto c = std::make_unique<httplib::Client>(o.host, o.port);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);  // a request's header and body go out at once (no Nagle wait)
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(5, 0);
    c->set_write_timeout(5, 0);
    return c;
}

// utime + stime of `pid` in seconds, and its resident and peak memory in KiB.
struct usage {
    double cpu_s = 0;
    long rss_kib = 0, hwm_kib = 0;
};
usage usage_of(long pid) {
    usage u;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    size_t close = text.rfind(')');
    if (close != std::string::npos) {
        std::istringstream rest(text.substr(close + 2));
        std::string field;
        for (int k = 3; k <= 15 && rest >> field; ++k) {
            if (k == 14 || k == 15) {  // utime, stime in clock ticks
                u.cpu_s += double(std::stoll(field)) / double(sysconf(_SC_CLK_TCK));
            }
        }
    }
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("VmRSS:", 0) == 0) {
            u.rss_kib = std::atol(line.c_str() + 6);
        } else if (line.rfind("VmHWM:", 0) == 0) {
            u.hwm_kib = std::atol(line.c_str() + 6);
        }
    }
    return u;
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) {
        return 0;
    }
    size_t k = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
    std::nth_element(v.begin(), v.begin() + long(k), v.end());
    return v[k];
}

}  // namespace

int main(int argc, char** argv) {
    options o             = parse(argc, argv);
    httplib::Headers auth = {{"Authorization", "Bearer " + o.token}};
    std::vector<agent> agents(size_t(o.agents));
    std::atomic<int> refused{0};
    auto slice = [&](int t, auto&& each) {
        for (int a = t; a < o.agents; a += o.connections) {
            each(a);
        }
    };

    // Joins: every connection joins its agents one after another.
    auto join_start = clock_type::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < o.connections; ++t) {
        threads.emplace_back([&, t] {
            auto c = client(o);
            slice(t, [&](int a) {
                json body = {{"name", "bench-agent-" + std::to_string(a)},
                             {"kind", "host"},
                             {"addresses",
                              {"10.1." + std::to_string(a / 256) + "." + std::to_string(a % 256) +
                               ":29610"}}};
                auto r    = c->Post("/v1/members", auth, body.dump(), "application/json");
                if (!r || r->status != 201) {
                    refused.fetch_add(1);
                    return;
                }
                json answer             = json::parse(r->body);
                agents[size_t(a)].id    = answer["id"].get<uint64_t>();
                agents[size_t(a)].lease = answer["lease"].get<std::string>();
            });
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    double join_s = std::chrono::duration<double>(clock_type::now() - join_start).count();
    std::printf("joins: %d agents over %d connections in %.3f s (%.0f joins/s), %d refused\n",
                o.agents, o.connections, join_s, o.agents / join_s, refused.load());

    // Heartbeats: agent a beats at hb_start + k·period + (a / agents)·period.
    threads.clear();
    std::vector<std::vector<double>> latency(size_t(o.connections));
    usage before  = o.pid > 0 ? usage_of(o.pid) : usage{};
    auto hb_start = clock_type::now();
    auto period   = std::chrono::duration<double>(o.period_s);
    int rounds    = std::max(1, int(o.duration_s / o.period_s));
    std::atomic<int> late{0};
    for (int t = 0; t < o.connections; ++t) {
        threads.emplace_back([&, t] {
            auto c = client(o);
            latency[size_t(t)].reserve(size_t(rounds) * size_t(o.agents / o.connections + 1));
            for (int k = 0; k < rounds; ++k) {
                slice(t, [&](int a) {
                    auto due = hb_start + std::chrono::duration_cast<clock_type::duration>(
                                              period * (k + double(a) / o.agents));
                    if (clock_type::now() > due + period) {
                        late.fetch_add(1);
                    }
                    std::this_thread::sleep_until(due);
                    auto sent = clock_type::now();
                    json body = {{"lease", agents[size_t(a)].lease}};
                    auto r    = c->Post(
                           "/v1/members/" + std::to_string(agents[size_t(a)].id) + "/heartbeat", auth,
                           body.dump(), "application/json");
                    latency[size_t(t)].push_back(
                        std::chrono::duration<double, std::micro>(clock_type::now() - sent)
                            .count());
                    if (!r || r->status != 200) {
                        refused.fetch_add(1);
                    }
                });
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    double hb_s = std::chrono::duration<double>(clock_type::now() - hb_start).count();
    std::vector<double> all;
    for (auto& l : latency) {
        all.insert(all.end(), l.begin(), l.end());
    }
    std::printf(
        "heartbeats: %zu in %.1f s (%.0f/s), round trip p50 %.0f us, p99 %.0f us, max "
        "%.0f us; %d sent more than a period late, %d refused\n",
        all.size(), hb_s, double(all.size()) / hb_s, percentile(all, 0.5), percentile(all, 0.99),
        percentile(all, 1.0), late.load(), refused.load());
    if (o.pid > 0) {
        usage after = usage_of(o.pid);
        std::printf(
            "loom-ctld: %.2f cores over the heartbeat phase (%.1f s CPU in %.1f s), RSS "
            "%.1f MiB, peak %.1f MiB\n",
            (after.cpu_s - before.cpu_s) / hb_s, after.cpu_s - before.cpu_s, hb_s,
            after.rss_kib / 1024.0, after.hwm_kib / 1024.0);
    }
    auto c       = client(o);
    auto members = c->Get("/v1/members", auth);
    int up       = 0;
    if (members && members->status == 200) {
        json answer = json::parse(members->body);  // held: the loop runs over a part of it
        for (const json& m : answer["members"]) {
            up += m["state"] == "up" && m["name"].get<std::string>().rfind("bench-agent-", 0) == 0;
        }
    }
    std::printf("members up at the end: %d of %d\n", up, o.agents);
    return refused.load() == 0 && up == o.agents ? 0 : 1;
}
