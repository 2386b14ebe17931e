#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# loomrun keeps the user's LOOM_* settings or refuses them with the reason (TAP): a job under
# LOOM_TRANSPORT=tcp or fault:tcp runs over it (as the ranks report), self runs one rank, the
# user's rendezvous and job id are the ones the ranks use, impossible combinations exit 2
# with a reason, and --fabric names a file it cannot open.
#
# Usage: test_loomrun_settings.sh PATH/TO/loomrun PATH/TO/loom-bench
set -u

LOOMRUN=${1:?usage: test_loomrun_settings.sh LOOMRUN LOOM_BENCH}
BENCH=${2:?usage: test_loomrun_settings.sh LOOMRUN LOOM_BENCH}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
unset LOOM_TRANSPORT LOOM_BOOTSTRAP LOOM_JOB LOOM_TCP_ADDR
small=("$BENCH" allreduce -b 8 -e 8 -n 1 -w 0)

# launch LOOMRUN_FLAG... ENV... -- LOOMRUN_ARGS...: loomrun under those variables (flags are
# the words before the first NAME=VALUE or --); stdout and stderr in $tmp/out and $tmp/err,
# the status in $rc.
launch() {
    local flags=() envs=()
    while [ "$1" != "--" ] && [[ "$1" != *=* ]]; do
        flags+=("$1")
        shift
    done
    while [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    env "${envs[@]}" "$LOOMRUN" "${flags[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

# runs NAME WANT_IN_OUTPUT ENV... -- LOOMRUN_ARGS...: exit 0 and a line containing WANT.
runs() {
    local name=$1 want=$2
    shift 2
    launch --timeout 60 "$@"
    if [ "$rc" -eq 0 ] && grep -qF -- "$want" "$tmp/out" "$tmp/err"; then
        pass "$name"
    else
        fail "$name" "status $rc, wanted '$want'" "$(tail -5 "$tmp/out")" "$(tail -5 "$tmp/err")"
    fi
}

# refused NAME REASON ENV... -- LOOMRUN_ARGS...: exit 2, one line naming REASON, no rank run.
refused() {
    local name=$1 want=$2
    shift 2
    launch "$@"
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$want" "$tmp/err" &&
        [ ! -s "$tmp/out" ]; then
        pass "$name"
    else
        fail "$name" "status $rc, wanted exit 2 naming '$want'" "$(cat "$tmp/err")"
    fi
}

runs "LOOM_TRANSPORT=tcp: the job runs over tcp" "transport tcp (LOOM_TRANSPORT)" \
    LOOM_TRANSPORT=tcp -- -n 2 -- "${small[@]}"
runs "LOOM_TRANSPORT=fault:tcp runs" "transport fault:tcp (LOOM_TRANSPORT)" \
    LOOM_TRANSPORT=fault:tcp -- -n 2 -- "${small[@]}"
runs "--transport fault:shm runs" "transport fault:shm" -- -n 2 --transport fault:shm -- \
    "${small[@]}"
runs "LOOM_TRANSPORT=self with -n 1 runs" "transport self (LOOM_TRANSPORT)" \
    LOOM_TRANSPORT=self -- -n 1 -- "${small[@]}"
runs "unset: loomrun's default shm" "transport shm" -- -n 2 -- "${small[@]}"
runs "the start line says what the job uses and who chose it" \
    "transport tcp (LOOM_TRANSPORT), bootstrap 127.0.0.1:" \
    LOOM_TRANSPORT=tcp LOOM_LOG_LEVEL=info -- -n 2 -- "${small[@]}"
mkdir -m 0700 "$tmp/rdv"
runs "the user's LOOM_BOOTSTRAP and LOOM_JOB are the ones the ranks use" \
    "job mine.1, rendezvous 'file:$tmp/rdv'" \
    LOOM_BOOTSTRAP="file:$tmp/rdv" LOOM_JOB=mine.1 LOOM_LOG_LEVEL=info -- -n 2 -- "${small[@]}"
if grep -qF "bootstrap file:$tmp/rdv (LOOM_BOOTSTRAP)" "$tmp/err"; then
    pass "the start line names the user's rendezvous"
else
    fail "the start line names the user's rendezvous" "$(head -3 "$tmp/err")"
fi

# --no-tag-output: rank 0's rows reach stdout bare, so an nccl-tests parser reads them as it
# reads them under mpirun (first field the size, at least the 13 standard columns); the
# default tags every line "[rank] ".
runs "--no-tag-output runs" "Avg bus bandwidth" -- -n 2 --no-tag-output -- \
    "$BENCH" allreduce -b 8 -e 64 -n 2 -w 1
if awk '!/^#/ && NF { if ($1 !~ /^[0-9]+$/ || NF < 13) bad = 1; rows++ }
        END { exit !(rows == 4 && !bad) }' "$tmp/out" && ! grep -q '^\[' "$tmp/out"; then
    pass "--no-tag-output: bare nccl-tests rows"
else
    fail "--no-tag-output: bare nccl-tests rows" "$(head -20 "$tmp/out")"
fi
runs "the default tags lines with the rank" "[0] # Avg bus bandwidth" -- -n 2 -- \
    "$BENCH" allreduce -b 8 -e 8 -n 1 -w 0

refused "self with several ranks is refused" "LOOM_TRANSPORT=self connects a rank only to itself" \
    LOOM_TRANSPORT=self -- -n 2 -- "${small[@]}"
refused "an unknown transport is refused" "unknown transport" LOOM_TRANSPORT=udp -- \
    -n 2 -- "${small[@]}"
refused "--transport against LOOM_TRANSPORT is refused" "give the transport once" \
    LOOM_TRANSPORT=tcp -- -n 2 --transport shm -- "${small[@]}"
refused "a LOOM_FABRIC unlike --fabric is refused" "conflicts with --fabric ring:2" \
    LOOM_FABRIC=mesh:1x2 -- -n 2 --fabric ring:2 -- "${small[@]}"
refused "--fabric names a file it cannot open" \
    "cannot open fabric file '/nonexistent.json': No such file or directory" \
    -- -n 2 --switch --fabric /nonexistent.json -- "${small[@]}"

echo "1..$n"
[ "$failures" -eq 0 ]
