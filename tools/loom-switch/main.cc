// SPDX-License-Identifier: Apache-2.0
// loom-switch: the software aggregation node (inc/node/switch_node.hh) as a process.
//
// Runs the node until SIGINT or SIGTERM, then prints its statistics and exits 0. The
// address it listens on is printed ("loom-switch listening on ADDR") and written to
// --ready-file, so launchers know when it is up and which port it got. With --stats ADDR
// it is a client instead: it asks that node for its statistics and prints them.
#include <loom/loom.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string_view>

#include "base/clock.hh"
#include "inc/node/join.hh"
#include "inc/node/key_file.hh"
#include "inc/node/ticket.hh"
#include "options.hh"
#include "tools/common/cli_parse.hh"

namespace loom::switch_tool {
namespace {

volatile sig_atomic_t stop_requested = 0;

void on_signal(int) {
    stop_requested = 1;
}

int fail(std::string_view reason, int code) {
    std::cout.flush();
    // The node's own messages already name it (they are log lines too): said once.
    constexpr std::string_view self = "loom-switch: ";
    if (reason.substr(0, self.size()) == self) {
        reason.remove_prefix(self.size());
    }
    std::cerr << self << reason << '\n';
    return code;
}

// Written beside, then renamed, so a launcher never reads half an address.
status write_ready_file(const std::string& path, const std::string& address) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        f << address << '\n';
        if (!f.flush()) {
            return system_error("cannot write --ready-file " + tmp);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        return system_error("cannot rename " + tmp + " to " + path);
    }
    return status::ok();
}

void install_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a peer that died is seen by the link, not as a signal
}

// The machine may be shared with the ranks: yield at once when idle, after many idle passes
// sleep briefly, and after seconds of nothing sleep longer, so an idle switch costs almost
// no CPU while a busy one answers at once.
void back_off(uint64_t idle_passes) {
    if (idle_passes < 2000) {
        sched_yield();
        return;
    }
    timespec ts{0, idle_passes < 50'000 ? 100'000 : 1'000'000};
    nanosleep(&ts, nullptr);
}

int serve(options o) {
    if (!o.key_file.empty()) {
        auto key = inc::load_node_key(o.key_file, true);
        if (!key) {
            return fail(key.error().message(), exit_bad_args);
        }
        o.node.key = *key;
    }
    o.node.memory_limit = uint64_t(o.max_memory_mib * double(1 << 20));
    o.node.job_memory   = uint64_t(o.job_memory_mib * double(1 << 20));
    auto node           = inc::switch_node::open(o.node);
    if (!node) {
        return fail(node.error().message(),
                    node.error().code() == LOOM_ERR_INVALID_ARGUMENT ? exit_bad_args : exit_failed);
    }
    std::string address = (*node)->address();
    std::cout << "loom-switch listening on " << address << std::endl;
    if (!o.ready_file.empty()) {
        if (status st = write_ready_file(o.ready_file, address); !st) {
            return fail(st.message(), exit_failed);
        }
    }
    double next_stats_s = now_s() + o.stats_interval_s;
    uint64_t idle       = 0;
    while (stop_requested == 0) {
        idle = (*node)->poll() ? 0 : idle + 1;
        if (idle > 0) {
            back_off(idle);
        }
        if (o.stats_interval_s > 0 && now_s() >= next_stats_s) {
            std::cout << (*node)->stats_text() << std::endl;
            next_stats_s = now_s() + o.stats_interval_s;
        }
    }
    std::cout << (*node)->stats_text() << std::flush;
    return exit_ok;
}

int query(const options& o) {
    auto text = inc::query_stats(o.stats_address, 2);  // a node answers at once
    if (!text) {
        return fail(text.error().message(), exit_failed);
    }
    std::cout << *text << std::flush;
    return exit_ok;
}

int print_ticket(const options& o) {
    auto key = inc::load_node_key(o.key_file, false);
    if (!key) {
        return fail(key.error().message(), exit_bad_args);
    }
    auto bytes = std::span(reinterpret_cast<const uint8_t*>(key->data()), key->size());
    std::cout << inc::ticket_text(bytes, o.ticket_job) << '\n' << std::flush;
    return exit_ok;
}

std::string version_text() {
    return std::string("loom-switch ") + loom_version() + "\nfeatures: " + loom_build_features();
}

int run(int argc, char** argv) {
    CLI::App app{"The loom software aggregation node (in-network collectives).", "loom-switch"};
    options o;
    add_options(app, o);
    app.set_version_flag("--version", version_text(), "print the version and build features");
    if (auto code =
            tools::parse_or_exit(app, argc, argv, exit_bad_args,
                                 [](const std::string& why, int c) { return fail(why, c); })) {
        return *code;
    }
    note_given(app, o);
    if (status st = check_options(o); !st) {
        return fail(st.message(), exit_bad_args);
    }
    if (o.ticket) {
        return print_ticket(o);
    }
    if (!o.stats_address.empty()) {
        return query(o);
    }
    install_handlers();
    return serve(o);
}

}  // namespace
}  // namespace loom::switch_tool

int main(int argc, char** argv) {
    try {
        return loom::switch_tool::run(argc, argv);
    } catch (const std::exception& e) {
        return loom::switch_tool::fail(std::string("unexpected error: ") + e.what(),
                                       loom::switch_tool::exit_failed);
    }
}
