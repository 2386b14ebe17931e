// SPDX-License-Identifier: Apache-2.0
// loom-ctld: the control plane's controller (docs/tools/loom-ctld.md). This slice holds the
// members (hosts, DPUs, switches) and their leases and the jobs' in-network slot leases, serves
// API v1 over HTTP/1.1 + JSON and /metrics, and keeps both tables in a state file.
//
// Threads: the HTTP workers answer requests; the main thread waits for SIGINT/SIGTERM and,
// between signals, sweeps expired leases and revokes allocations over nodes gone out (its
// wait's timeout is the sweep's timer). The first line on stdout is "loom-ctld listening on
// HOST:PORT" (the port the kernel picked for 0).
#include <httplib.h>
#include <loom/loom.h>
#include <signal.h>

#include <cerrno>
#include <iostream>
#include <string_view>
#include <thread>

#include "api.hh"
#include "controller.hh"
#include "options.hh"
#include "tools/common/cli_parse.hh"
#include "tools/common/secret_file.hh"

namespace loom::ctld {
namespace {

int fail(std::string_view reason, int code) {
    return tools::fail_line("loom-ctld", reason, code);
}

std::string version_text() {
    return tools::version_text("loom-ctld", "(API v1)");
}

// Loopback is the default; anything else is a choice worth saying out loud.
bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Blocked in every thread (the workers inherit the mask), and taken by sigtimedwait.
sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

// Waits for a stop signal, sweeping leases about four times a heartbeat period, so a member
// is marked down at most a quarter period after its third missed heartbeat.
void wait_for_stop(controller& ctl) {
    sigset_t set   = stop_signals();
    auto period_ns = int64_t(ctl.heartbeat_ms()) * 1'000'000 / 4;
    timespec tick{time_t(period_ns / 1'000'000'000), long(period_ns % 1'000'000'000)};
    while (true) {
        int sig = sigtimedwait(&set, nullptr, &tick);
        if (sig == SIGINT || sig == SIGTERM) {
            return;
        }
        ctl.sweep();
    }
}

int serve(const options& o) {
    auto token = tools::read_token_file(o.token_file, "--token-file");
    if (!token) {
        return fail(token.error().message(), exit_bad_args);
    }
    controller ctl(o, *token);
    if (status st = ctl.load(); !st) {
        return fail(st.message(), exit_failed);
    }
    // Written once before serving: a --state that cannot be written is found at start.
    if (status st = ctl.persist(); !st) {
        return fail(st.message(), exit_failed);
    }
    sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that went away is seen by the write, not as a signal

    httplib::Server server;
    int threads           = o.threads;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
    server.set_payload_max_length(o.max_body_bytes);
    server.set_read_timeout(5, 0);
    server.set_write_timeout(5, 0);
    server.set_keep_alive_timeout(5);
    // An answer's header and body go out at once, not held by Nagle for the client's
    // delayed ACK (40 ms per request on a kept-alive connection otherwise).
    server.set_tcp_nodelay(true);
    install_api(server, ctl);
    int port = o.where.port;
    if (port == 0) {
        port = server.bind_to_any_port(o.where.host);
    } else if (!server.bind_to_port(o.where.host, port)) {
        port = -1;
    }
    if (port <= 0) {
        return fail(
            "cannot listen on " + o.listen + " (the address is in use or not one of this host's)",
            exit_failed);
    }
    if (!is_loopback(o.where.host)) {
        std::cerr << "loom-ctld: note: listening on " << o.listen
                  << ", reachable beyond this host; the API has no TLS yet (keep it on a "
                     "management network)"
                  << std::endl;
    }
    std::cout << "loom-ctld listening on " << net::address_text({o.where.host, uint16_t(port)})
              << std::endl;
    std::thread http([&server] { server.listen_after_bind(); });
    wait_for_stop(ctl);
    server.stop();
    http.join();
    if (status st = ctl.persist(); !st) {
        return fail(st.message(), exit_failed);
    }
    std::cout << "loom-ctld stopped" << std::endl;
    return exit_ok;
}

int run(int argc, char** argv) {
    CLI::App app{"The loom control plane's controller: members, leases, API v1 over HTTP.",
                 "loom-ctld"};
    options o;
    add_options(app, o);
    app.set_version_flag("--version", version_text(), "print the version and build features");
    if (auto code =
            tools::parse_or_exit(app, argc, argv, exit_bad_args,
                                 [](const std::string& why, int c) { return fail(why, c); })) {
        return *code;
    }
    if (status st = check_options(o); !st) {
        return fail(st.message(), exit_bad_args);
    }
    return serve(o);
}

}  // namespace
}  // namespace loom::ctld

int main(int argc, char** argv) {
    try {
        return loom::ctld::run(argc, argv);
    } catch (const std::exception& e) {
        return loom::ctld::fail(std::string("unexpected error: ") + e.what(),
                                loom::ctld::exit_failed);
    }
}
