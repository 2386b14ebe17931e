#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tcp between network namespaces: N ranks, each in its own namespace with its own address
# (10.77.<run>.<rank+1>/24 on a veth joined to a bridge in a hub namespace), exchange eager
# and rendezvous messages with tcp_rank_probe. The driver picks each rank's address itself
# (the first non-loopback IPv4 address): the test checks that every rank published its own
# namespace address, not 127.0.0.1. Needs root and iproute2; otherwise it is skipped (77).
# Namespaces and links are removed on every exit path.
set -u
probe=$1
n=${2:-3}

if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
    echo "SKIP: needs root and iproute2 (ip netns)"
    exit 77
fi
tag=lt$$
hub=${tag}hub
subnet=10.77.$(( $$ % 250 ))
store=$(mktemp -d /tmp/loom-netns-XXXXXX)
logs=$(mktemp -d /tmp/loom-netns-logs-XXXXXX)

cleanup() {
    for ((r = 0; r < n; r++)); do
        ip netns del ${tag}r$r 2>/dev/null
    done
    ip netns del $hub 2>/dev/null
    rm -rf "$store" "$logs"
}
trap cleanup EXIT

if ! ip netns add $hub 2>/dev/null; then
    echo "SKIP: cannot create network namespaces here"
    exit 77
fi
ip -n $hub link add br0 type bridge && ip -n $hub link set br0 up || exit 1
for ((r = 0; r < n; r++)); do
    ns=${tag}r$r
    ip netns add $ns || exit 1
    ip link add ${tag}v$r type veth peer name ${tag}p$r || exit 1
    ip link set ${tag}v$r netns $ns && ip link set ${tag}p$r netns $hub || exit 1
    ip -n $hub link set ${tag}p$r master br0 && ip -n $hub link set ${tag}p$r up || exit 1
    ip -n $ns link set lo up && ip -n $ns link set ${tag}v$r up || exit 1
    ip -n $ns addr add $subnet.$((r + 1))/24 dev ${tag}v$r || exit 1
done

pids=()
for ((r = 0; r < n; r++)); do
    timeout 60 ip netns exec ${tag}r$r "$probe" $r $n "$store" >"$logs/$r" 2>&1 &
    pids+=($!)
done
status=0
for ((r = 0; r < n; r++)); do
    if ! wait ${pids[$r]}; then
        echo "rank $r failed:"
        status=1
    fi
    sed "s/^/  [$r] /" "$logs/$r"
    if ! grep -q "listens on $subnet.$((r + 1)):" "$logs/$r"; then
        echo "rank $r did not publish its namespace address $subnet.$((r + 1))"
        status=1
    fi
done
exit $status
