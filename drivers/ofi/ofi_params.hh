// SPDX-License-Identifier: Apache-2.0
// The ofi driver (libfabric): which provider, where a tcp-like provider binds, message
// limits and queue sizes, the registration cache, the datagram endpoint's idle timeout.
#pragma once

#include "base/params.hh"

namespace loom::drivers::ofi::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"ofi"};

inline const loom::params::string_param provider{
    component, "LOOM_OFI_PROVIDER", "",
    "libfabric provider the ofi driver opens (as fi_info -l names it: tcp;ofi_rxm, shm, "
    "udp;ofi_rxd, net, verbs;ofi_rxm, efa, cxi, ...); unset: the best available, hardware first "
    "(cxi, efa, verbs;ofi_rxm, psm3), then tcp;ofi_rxm, net, udp;ofi_rxd, sockets, shm. A "
    "provider that is not available is an error naming those that are"};
inline const loom::params::string_param addr{
    component, "LOOM_OFI_ADDR", "",
    "address a network provider (tcp;ofi_rxm, udp;ofi_rxd, net, sockets, verbs) binds to, so each "
    "rank of a host or network namespace uses its own; unset: the address of LOOM_OFI_IFACE, else "
    "the provider's own choice; ignored by shm"};
inline const loom::params::string_param iface{
    component, "LOOM_OFI_IFACE", "",
    "network interface (e.g. eth0, veth1) whose IPv4 address a network provider binds to when "
    "LOOM_OFI_ADDR is unset; an interface without one is an error"};
inline const loom::params::int_param eager_limit{
    component, "LOOM_OFI_EAGER_LIMIT", "8192", "bytes",
    "largest ofi message sent eagerly (copied into a pre-posted receive buffer); larger ones are a "
    "rendezvous: the receiver reads the sender's registered buffer straight into its own (RMA "
    "read), or, without FI_RMA, the sender sends into the receive once it is posted; unset over "
    "tcp;ofi_rxm: FI_OFI_RXM_BUFFER_SIZE less the 56-byte header (65480); all ranks must agree"};
inline const loom::params::int_param send_queue{
    component, "LOOM_OFI_SEND_QUEUE", "256", "messages",
    "ofi messages in flight per endpoint (registered send buffers); one more is "
    "LOOM_ERR_NO_RESOURCE until a send completes"};
inline const loom::params::int_param recv_buffers{
    component, "LOOM_OFI_RECV_BUFFERS", "256", "buffers",
    "receive buffers of LOOM_OFI_EAGER_LIMIT bytes each the ofi driver keeps posted for arriving "
    "messages; unset over tcp;ofi_rxm with LOOM_OFI_EAGER_LIMIT unset: 64 (of 64 KiB)"};
inline const loom::params::int_param max_messages{
    component, "LOOM_OFI_MAX_MESSAGES", "32768", "messages",
    "ofi operations posted plus early arrivals held per endpoint; beyond, posting is "
    "LOOM_ERR_NO_RESOURCE"};
inline const loom::params::int_param mr_cache{
    component, "LOOM_OFI_MR_CACHE", "256", "regions",
    "memory registrations the ofi driver keeps (rendezvous buffers, by page-aligned range); the "
    "least recently used unused one is released at the cap"};
inline const loom::params::choice_param rma{
    component, "LOOM_OFI_RMA", "auto", "auto|off",
    "large ofi messages by RMA read where the provider offers FI_RMA (auto), or always by a "
    "clear-to-send and one tagged send into the posted receive (off)"};

inline const loom::params::real_param datagram_idle_timeout{
    component, "LOOM_OFI_DATAGRAM_IDLE_TIMEOUT", "300", "seconds",
    "an ofi: datagram peer heard nothing from (no frame, no keep-alive) for this long is taken as "
    "gone: alive() turns false; each side sends a keep-alive after a quarter of it without "
    "sending, from its send() and recv() calls, so a side that does not poll its endpoint for "
    "this long is taken as gone too (long enough for a job's compute between collectives); 0: "
    "never (a goodbye, or a send the provider fails, only; keep-alives then go every second)"};

/// libfabric's own setting, read here only to know whether the user chose it (ofi_fabric.cc).
inline const loom::params::int_param rxd_max_unacked{
    component,
    "FI_OFI_RXD_MAX_UNACKED",
    "",
    "packets",
    "libfabric's udp;ofi_rxd window: packets sent to a peer before an acknowledgement; unset, "
    "the ofi driver starts it at 16 (libfabric's default, 128, overruns a UDP socket's receive "
    "buffer when the receiver is descheduled, and rxd then backs off for seconds)",
    loom::params::foreign};

/// libfabric's own setting, read here only to know whether the user chose it (ofi_fabric.cc).
inline const loom::params::int_param rxm_buffer_size{
    component,
    "FI_OFI_RXM_BUFFER_SIZE",
    "",
    "bytes",
    "libfabric's ofi_rxm bounce buffers, and so the largest message it sends eagerly; unset, and "
    "LOOM_OFI_PROVIDER unset or tcp;ofi_rxm, the ofi driver starts it at 65536 (libfabric's own, "
    "16384, sends loom's messages of 16 KiB to 1 MiB as rendezvous of three trips through kernel "
    "sockets); over tcp;ofi_rxm loom's eager limit follows it",
    loom::params::foreign};
/// libfabric's own setting, read here only to know whether the user chose it (ofi_fabric.cc).
inline const loom::params::int_param rxm_msg_rx_size{
    component,
    "FI_OFI_RXM_MSG_RX_SIZE",
    "",
    "buffers",
    "libfabric's ofi_rxm receive buffers posted per connection; unset where the ofi driver starts "
    "FI_OFI_RXM_BUFFER_SIZE at 65536, it starts this at 32 (libfabric's own, 128, of 64 KiB each "
    "took a 4-rank all-reduce's ranks from 111 to 372 MB resident; 32: 173 MB, as fast)",
    loom::params::foreign};

}  // namespace loom::drivers::ofi::params
