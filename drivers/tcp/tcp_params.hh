// SPDX-License-Identifier: Apache-2.0
// The tcp driver: where it listens, message limits, back-pressure, socket buffers.
#pragma once

#include "base/params.hh"

namespace loom::drivers::tcp::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"tcp"};

inline const loom::params::string_param addr{
    component, "LOOM_TCP_ADDR", "",
    "IPv4 address the tcp driver listens on and publishes (as tcp/<rank> in the job's key/value "
    "store); unset: the address of LOOM_TCP_IFACE, else the host's first non-loopback IPv4 address "
    "that is up, else 127.0.0.1"};
inline const loom::params::string_param iface{
    component, "LOOM_TCP_IFACE", "",
    "network interface (e.g. eth0, veth1) whose IPv4 address tcp listens on when LOOM_TCP_ADDR is "
    "unset; an interface without one is an error"};
inline const loom::params::int_param eager_limit{
    component, "LOOM_TCP_EAGER_LIMIT", "65536", "bytes",
    "largest tcp message sent eagerly (header and payload at once); larger ones wait for the "
    "receive (rendezvous) and land in its buffer with no intermediate copy; all ranks must agree"};
inline const loom::params::int_param send_queue{
    component, "LOOM_TCP_SEND_QUEUE", "1024", "messages",
    "tcp sends in flight per peer; one more is LOOM_ERR_NO_RESOURCE; all ranks must agree"};
inline const loom::params::int_param max_messages{
    component, "LOOM_TCP_MAX_MESSAGES", "16384", "messages",
    "tcp receives posted plus early arrivals held per endpoint; beyond, post_recv is "
    "LOOM_ERR_NO_RESOURCE and reading a connection pauses until one completes"};
inline const loom::params::int_param unexpected_bytes{
    component, "LOOM_TCP_UNEXPECTED_BYTES", "268435456", "bytes",
    "memory tcp may hold for eager messages that arrive before their receive; beyond, reading that "
    "connection pauses until a receive takes one (back-pressure)"};
inline const loom::params::int_param sockbuf{
    component, "LOOM_TCP_SOCKBUF", "0", "bytes",
    "SO_SNDBUF and SO_RCVBUF of tcp connections; 0 keeps the kernel's autotuning"};

}  // namespace loom::drivers::tcp::params
