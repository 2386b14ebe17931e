// SPDX-License-Identifier: Apache-2.0
// The dpdk driver's settings: the EAL's arguments, the ports' queues and MTU, how long a
// port may take to come up and stay down, and how many memif clients a listener serves.
// Read once per port open (never on the fast path).
#pragma once

#include "base/params.hh"

namespace loom::drivers::dpdk::params {

/// Each handle below names it, and so registers itself there.
inline loom::params::component component{"dpdk"};

inline const loom::params::string_param eal_args{
    component, "LOOM_DPDK_EAL_ARGS", "",
    "arguments of DPDK's rte_eal_init, whitespace-separated and passed as given (--vdev ..., "
    "--no-huge -m MB, --no-pci, --file-prefix NAME, -l CPUS, -a PCI); unset: '--no-huge -m 256 "
    "--no-pci --no-shconf --no-telemetry --log-level=*:error -l CPU' with CPU the one the first "
    "dpdk call runs on (no hugepages, NICs or shared files needed; many processes side by side; "
    "docs/drivers/dpdk.md says why each is there). The EAL starts once per process, on the first "
    "use of a dpdk port"};
inline const loom::params::int_param ring{
    component, "LOOM_DPDK_RING", "512", "descriptors",
    "descriptors of each dpdk port's rx and tx queue, and a memif port's ring slots each way "
    "(power of two, 64..4096); the port's mbuf pool holds both rings, two bursts and the pool's "
    "per-core cache"};
inline const loom::params::int_param mtu{
    component, "LOOM_DPDK_MTU", "9000", "bytes",
    "MTU a dpdk port is set to, or the largest the port allows below it (at least 8248, so an "
    "in-network packet travels in one frame); a port whose driver sets no MTU (memif) carries "
    "frames up to it, each memif buffer holding a whole one; an af_packet port keeps its "
    "interface's MTU"};
inline const loom::params::real_param link_timeout{
    component, "LOOM_DPDK_LINK_TIMEOUT", "10", "seconds",
    "how long a dpdk listener's port may take to come up (af_packet: its link) before "
    "listening fails naming the port; a connect waits for its own timeout instead (a memif "
    "client: for its server to listen and accept)"};
inline const loom::params::real_param down_grace{
    component, "LOOM_DPDK_DOWN_GRACE", "0.5", "seconds",
    "a dpdk link whose port reports the link down for longer than this is taken as gone "
    "(alive() false; a memif port goes down when the process at its other end closes or dies)"};
inline const loom::params::int_param memif_ids{
    component, "LOOM_DPDK_MEMIF_IDS", "4", "interfaces",
    "memif interfaces a dpdk:memif:NAME listener offers on its socket, ids 0..N-1, one per "
    "client (memif pairs one server interface with one client); each is a port with its own "
    "mbuf pool (1..64)"};

inline const loom::params::string_param dpu_socket{
    component, "LOOM_DPU_SOCKET", "",
    "transport dpu: the memif socket (a file) of this rank's host port on its own DPU "
    "(tools/loom-dpu listens there; loomrun --dpu sets it per rank). Unset: the dpu transport "
    "refuses to open"};
inline const loom::params::string_param dpu_secret{
    component, "LOOM_DPU_SECRET", "",
    "transport dpu: the memif secret of the job's DPU host ports (at most 24 characters; "
    "loomrun --dpu draws one per job and gives it to its loom-dpu processes and ranks). Empty: "
    "no secret"};

}  // namespace loom::drivers::dpdk::params
