// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: loom-ctld's API v1 as a client reaches it, raw bytes on a connection.
// The bytes go through cpp-httplib's request parser (request line, headers, chunked or
// sized bodies, keep-alive: several requests on one connection) into loom-ctld's routes,
// token check, rate limit, JSON handlers and error handler, with the controller's member
// table kept from input to input (joins, heartbeats, leaves and sweeps meet earlier
// members). What it must never do: crash, leak, or read or write out of bounds.
#include <httplib.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "tools/loom-ctld/api.hh"
#include "tools/loom-ctld/controller.hh"

namespace {

// The token the corpus's requests carry (fuzz/corpus/ctld_api).
constexpr const char* fuzz_token = "fuzz-token-0123456789abcdef";

// A connection whose peer sent `data` and reads nothing back.
class memory_stream final : public httplib::Stream {
  public:
    memory_stream(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    bool is_readable() const override { return at_ < size_; }
    bool is_writable() const override { return true; }
    ssize_t read(char* ptr, size_t size) override {
        size_t n = std::min(size, size_ - at_);
        if (n > 0) {
            std::memcpy(ptr, data_ + at_, n);
        }
        at_ += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char*, size_t size) override { return static_cast<ssize_t>(size); }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip   = "127.0.0.1";
        port = 40000;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip   = "127.0.0.1";
        port = 29600;
    }
    socket_t socket() const override { return INVALID_SOCKET; }

  private:
    const uint8_t* data_;
    size_t size_;
    size_t at_ = 0;
};

// The server's own per-connection loop, on a memory connection (process_request is
// protected: the loop a listening socket would run).
class memory_server final : public httplib::Server {
  public:
    void serve(httplib::Stream& connection) {
        bool closed = false;
        for (int i = 0; i < 8 && connection.is_readable() && !closed; ++i) {
            if (!process_request(connection, false, closed, [](httplib::Request&) {})) {
                break;
            }
        }
    }
};

struct harness {
    loom::ctld::options o;
    loom::ctld::controller ctl;
    memory_server server;
    harness() : o(fuzz_options()), ctl(o, fuzz_token) {
        server.set_payload_max_length(o.max_body_bytes);
        loom::ctld::install_api(server, ctl);
    }
    static loom::ctld::options fuzz_options() {
        loom::ctld::options o;
        o.rate_per_s  = 0;     // the limiter is exercised by its own test; here every
        o.max_members = 1024;  // request should reach the routes
        o.heartbeat_s = 0.05;
        return o;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static harness* h = new harness();  // kept across inputs: the table grows and ages
    memory_stream connection(data, size);
    h->server.serve(connection);
    h->ctl.sweep();
    return 0;
}
