// SPDX-License-Identifier: Apache-2.0
// loom-dpu: the data plane of one node's DPU as a DPDK process (docs/tools/loom-dpu.md).
// Opens its ports (ports.hh), routes until SIGINT or SIGTERM (router.hh), then prints its
// statistics on stdout and exits 0. SIGUSR1 prints them on stderr while it runs, which is
// what `loom-dpu --stats --node N --dir D` asks for.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>

#include "aggregate.hh"
#include "options.hh"
#include "ports.hh"
#include "router.hh"
#include "tools/common/cli_parse.hh"

namespace loom::dpu {
namespace {

volatile sig_atomic_t stop_requested     = 0;
volatile sig_atomic_t dump_requested     = 0;
volatile sig_atomic_t agg_dump_requested = 0;

void on_stop(int) {
    stop_requested = 1;
}

void on_dump(int) {
    dump_requested     = 1;
    agg_dump_requested = 1;
}

int fail(const std::string& reason, int code) {
    constexpr std::string_view self = "loom-dpu: ";
    std::string_view r(reason);
    if (r.substr(0, self.size()) == self) {
        r.remove_prefix(self.size());
    }
    return tools::fail_line("loom-dpu", r, code);
}

// --stats: SIGUSR1 to the pid in the node's ready file.
int query_stats(const options& o) {
    std::ifstream in(ready_file(o.dir, o.node));
    long pid = 0;
    if (!(in >> pid) || pid <= 0) {
        return fail(
            "--stats: no running loom-dpu of node " + std::to_string(o.node) + " in " + o.dir,
            exit_failed);
    }
    if (kill(pid_t(pid), SIGUSR1) != 0) {
        return fail("--stats: loom-dpu of node " + std::to_string(o.node) + " (pid " +
                        std::to_string(pid) + ") is gone",
                    exit_failed);
    }
    std::cout << "loom-dpu of node " << o.node << " (pid " << pid
              << ") prints its statistics on its stderr\n";
    return exit_ok;
}

int run(int argc, char** argv) {
    CLI::App app{"loom-dpu: the router of one node's DPU (DPDK memif ports)", "loom-dpu"};
    options o;
    add_options(app, o);
    if (auto code = tools::parse_or_exit(app, argc, argv, exit_bad_args, fail)) {
        return *code;
    }
    if (o.stats_query) {
        return query_stats(o);
    }
    auto shape = check_options(o);
    if (!shape) {
        return fail(shape.error().message(), exit_bad_args);
    }
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    sa.sa_handler = on_dump;
    sigaction(SIGUSR1, &sa, nullptr);
    // The aggregation nodes first (aggregate.hh: node 0's root listens before its ready file).
    std::unique_ptr<aggregation> agg;
    if (o.aggregate) {
        auto a = aggregation::open(o, shape->size());
        if (!a) {
            return fail(a.error().message(), exit_failed);
        }
        agg = std::move(*a);
    }
    auto ports = open_ports(o, *shape);
    if (!ports) {
        return fail(ports.error().message(), exit_failed);
    }
    {
        router r(o, *shape, *ports);
        if (agg) {
            r.also_poll([&agg] {
                bool work = agg->poll();
                if (agg_dump_requested != 0) {
                    agg_dump_requested = 0;
                    agg->print(stderr);
                }
                return work;
            });
        }
        r.run(&stop_requested, &dump_requested);
        print_stats(stdout, o.node, *ports, r.stats());
        if (agg) {
            agg->print(stdout);
        }
    }
    unlink(ready_file(o.dir, o.node).c_str());
    return exit_ok;
}

}  // namespace
}  // namespace loom::dpu

int main(int argc, char** argv) {
    return loom::dpu::run(argc, argv);
}
