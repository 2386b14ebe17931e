#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Which transport a communicator takes when none is named (LOOM_TRANSPORT unset):
#   run_transport_choice.sh local LOOMRUN PROBE   two ranks started by hand on this host
#       (file rendezvous, no launcher): rank 0 says "transport shm: all 2 ranks on one host"
#       and both run over shared memory.
#   run_transport_choice.sh netns LOOMRUN PROBE   loomrun --hosts netns -n 3 with no
#       transport named (each rank its own namespace, so its own host): loomrun leaves
#       LOOM_TRANSPORT unset, rank 0 says "transport <network>: ranks on 3 hosts" and every
#       rank runs over that network transport; with LOOM_OFI_PROVIDER=tcp;ofi_rxm (ofi
#       built) the choice is ofi; with LOOM_TRANSPORT=tcp nothing is chosen.
# Exit 77 (meson: skipped, with the reason) where network namespaces cannot be made.
set -u
kind=$1 loomrun=$2 probe=$3
unset LOOM_TRANSPORT
export LOOM_LOG_LEVEL=info
failures=0
fail() {
    echo "not ok: $1"
    printf '%s\n' "$2" | sed 's/^/    /'
    failures=$((failures + 1))
}
pass() { echo "ok: $1"; }

case "$kind" in
local)
    dir=$(mktemp -d) || exit 1
    trap 'rm -rf "$dir"' EXIT
    pids=()
    for r in 0 1; do
        LOOM_RANK=$r LOOM_SIZE=2 LOOM_JOB="tc$$" LOOM_BOOTSTRAP="file:$dir/store" \
            timeout 60 "$probe" >"$dir/out.$r" 2>&1 &
        pids+=($!)
    done
    codes=""
    for p in "${pids[@]}"; do
        wait "$p"
        codes+="$? "
    done
    out=$(cat "$dir/out.0" "$dir/out.1")
    [ "$codes" = "0 0 " ] || fail "both ranks exit 0 (got $codes)" "$out"
    grep -q "INFO init: transport shm: all 2 ranks on one host (LOOM_TRANSPORT unset)" \
        "$dir/out.0" && pass "rank 0 says it chose shm, all ranks on one host" ||
        fail "rank 0 says it chose shm, all ranks on one host" "$out"
    [ "$(grep -c 'allreduce ok over shm' <<<"$out")" = 2 ] &&
        pass "both ranks ran over shared memory" || fail "both ranks ran over shared memory" "$out"
    ;;
netns)
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: --hosts netns needs root"; exit 77; }
    command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) is not installed"; exit 77; }
    out=$("$loomrun" -n 3 --hosts netns --timeout 60 -- "$probe" 2>&1)
    code=$?
    [ "$code" = 0 ] || fail "loomrun --hosts netns without a transport exits 0 (got $code)" "$out"
    grep -q "loomrun: 3 ranks, transport unset (left to the ranks" <<<"$out" &&
        pass "loomrun leaves the transport to the ranks" ||
        fail "loomrun leaves the transport to the ranks" "$out"
    chosen=$(sed -n 's/.*INFO init: transport \([a-z]*\): ranks on 3 hosts (LOOM_TRANSPORT unset)$/\1/p' <<<"$out")
    case "$chosen" in
    tcp | ofi) pass "rank 0 says it chose $chosen: ranks on 3 hosts" ;;
    *) fail "rank 0 names a network transport and the 3 hosts" "$out" ;;
    esac
    [ "$(grep -c 'allreduce ok over tcp' <<<"$out")" = 3 ] &&
        pass "every rank ran over a network transport" ||
        fail "every rank ran over a network transport" "$out"
    [ -n "$chosen" ] && [ "$(grep -c "rank [0-2] of 3: $chosen communicator up" <<<"$out")" = 3 ] &&
        pass "every rank opened $chosen" || fail "every rank opened the chosen transport" "$out"
    # A network provider named for ofi (LOOM_OFI_PROVIDER) makes ofi the choice.
    if "$loomrun" --version | grep -q "ofi: enabled"; then
        out=$(LOOM_OFI_PROVIDER='tcp;ofi_rxm' "$loomrun" -n 2 --hosts netns --timeout 60 -- "$probe" 2>&1)
        code=$?
        [ "$code" = 0 ] && grep -q "INFO init: transport ofi: ranks on 2 hosts (LOOM_TRANSPORT unset)$" <<<"$out" &&
            [ "$(grep -c "rank [01] of 2: ofi communicator up" <<<"$out")" = 2 ] &&
            pass "LOOM_OFI_PROVIDER=tcp;ofi_rxm: the ranks take ofi" ||
            fail "LOOM_OFI_PROVIDER=tcp;ofi_rxm: the ranks take ofi (exit $code)" "$out"
    else
        echo "ok: # SKIP ofi not built: the LOOM_OFI_PROVIDER case is not run"
    fi
    out=$(LOOM_TRANSPORT=tcp "$loomrun" -n 2 --hosts netns --timeout 60 -- "$probe" 2>&1)
    code=$?
    [ "$code" = 0 ] && ! grep -q "LOOM_TRANSPORT unset" <<<"$out" &&
        pass "a named transport is taken as given, nothing chosen" ||
        fail "a named transport is taken as given, nothing chosen (exit $code)" "$out"
    ;;
*)
    echo "run_transport_choice.sh: unknown kind '$kind'" >&2
    exit 2
    ;;
esac
[ "$failures" = 0 ] || { echo "$failures failed"; exit 1; }
