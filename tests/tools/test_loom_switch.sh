#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loom-switch's command line (TAP): --version like the other tools, and the flags that
# contradict each other or name an output it cannot write refused at start, with one line
# "loom-switch: <reason>" and exit 2, before the node listens; --insecure on a listener that
# reaches the network (exit 1, as the node refuses it).
#
# Usage: test_loom_switch.sh PATH/TO/loom-switch        (Meson passes the built binary)
set -u

SWITCH=${1:?usage: test_loom_switch.sh PATH/TO/loom-switch}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

# refused NAME PATTERN ARGS...: exit 2, one line naming PATTERN, nothing listened.
refused() {
    local name=$1 pattern=$2
    shift 2
    expect_refusal "$name" 2 "$pattern" "$SWITCH" "$@"
    if grep -q "listening on" "$tmp/out"; then
        fail "$name: refused before listening" "stdout: $(head -c 200 "$tmp/out")"
    fi
}

"$SWITCH" --version >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ] && grep -q "^loom-switch [0-9]" "$tmp/out" &&
    grep -q "^features: " "$tmp/out"; then
    pass "--version prints the version and the build features"
else
    fail "--version prints the version and the build features" "exit $rc" \
        "stdout: $(head -c 200 "$tmp/out")" "stderr: $(head -c 200 "$tmp/err")"
fi

listen=(--listen tcp:127.0.0.1:0 --insecure)
refused "--ready-file in a missing folder" "--ready-file $tmp/none/x: no folder $tmp/none" \
    "${listen[@]}" --ready-file "$tmp/none/x"
refused "--ready-file naming a folder" "is a folder" "${listen[@]}" --ready-file "$tmp"
mkdir -p "$tmp/ro" && chmod 0555 "$tmp/ro"
if [ "$(id -u)" -ne 0 ]; then
    refused "--ready-file in a read-only folder" "is not writable" \
        "${listen[@]}" --ready-file "$tmp/ro/x"
else
    # root writes anywhere: the node runs as nobody here, so the folder's mode binds it.
    chmod 0711 "$tmp"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$SWITCH" "${listen[@]}" \
        --ready-file "$tmp/ro/x" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -q "^loom-switch: .*is not writable" "$tmp/err" && ! grep -q "listening on" "$tmp/out"; then
        pass "--ready-file in a read-only folder"
    else
        fail "--ready-file in a read-only folder" "exit $rc" "stderr: $(head -c 300 "$tmp/err")"
    fi
fi
refused "--job-quota above --slots" "--job-quota 100 is larger than --slots 4" \
    "${listen[@]}" --job-quota 100 --slots 4
refused "--job-quota above the default pool" "--job-quota 2000 is larger than --slots 1024" \
    "${listen[@]}" --job-quota 2000
refused "--job-memory above --max-memory" "--job-memory 100 MiB is larger than --max-memory 50 MiB" \
    "${listen[@]}" --job-memory 100 --max-memory 50

# An ofi: listener (other than ofi:shm) reaches the network: --insecure is refused there as
# on a tcp address that is not loopback, before the provider is opened.
expect_refusal "--insecure on an ofi: network listener" 2 \
    "--insecure on ofi:udp would admit joins from other hosts" "$SWITCH" --listen ofi:udp --insecure

# A node limit below a default per-job one lowers that one: the node starts.
timeout 2 "$SWITCH" "${listen[@]}" --slots 4 --max-memory 16 --ready-file "$tmp/ready" \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 124 ] && [ ! -s "$tmp/err" ] && [ -s "$tmp/ready" ]; then
    pass "--slots and --max-memory below the default per-job limits start the node"
else
    fail "--slots and --max-memory below the default per-job limits start the node" "exit $rc" \
        "stderr: $(head -c 200 "$tmp/err")"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
