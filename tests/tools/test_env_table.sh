#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The parameter registry as users meet it (TAP): docs/environment.md's table is the one
# `loomrun --config --markdown` prints; a misspelt LOOM_* variable gets one warning naming
# the closest parameter, in loomrun and in every rank; the variables loomrun exports to its
# ranks (identity, rendezvous, fabric, link statistics, aggregation nodes) are all declared,
# so they never warn. Ranks run `loom-sim --config`: processes, but no communicator.
#
# Usage: test_env_table.sh PATH/TO/loomrun PATH/TO/loom-sim PATH/TO/environment.md
set -u

LOOMRUN=${1:?usage: test_env_table.sh LOOMRUN LOOM_SIM PAGE}
SIM=${2:?usage: test_env_table.sh LOOMRUN LOOM_SIM PAGE}
PAGE=${3:?usage: test_env_table.sh LOOMRUN LOOM_SIM PAGE}
# shellcheck source=tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"
export TMPDIR=$tmp
scripts=$(dirname "${BASH_SOURCE[0]}")/../../scripts
warning='LOOM_SHM_SLOTBYTES is not a loom parameter; did you mean LOOM_SHM_SLOT_BYTES?'

if out=$("$scripts/env_table.sh" --check "$LOOMRUN" "$PAGE" 2>&1); then
    pass "docs/environment.md's table is the registry's"
else
    mapfile -t lines <<<"$out"
    fail "docs/environment.md's table is the registry's" "${lines[@]}"
fi

rows=$("$LOOMRUN" --config --markdown | grep -c '^| `LOOM_')
described=$("$LOOMRUN" --config | grep -c '^LOOM_')
if [ "$rows" -eq "$described" ] && [ "$rows" -ge 55 ]; then
    pass "one table row per parameter of --config ($rows)"
else
    fail "one table row per parameter of --config" "rows $rows, --config $described"
fi

if "$LOOMRUN" --markdown >/dev/null 2>&1; then
    fail "--markdown alone is a usage error"
else
    pass "--markdown alone is a usage error"
fi

err=$(LOOM_SHM_SLOTBYTES=1 "$LOOMRUN" --config 2>&1 >/dev/null)
if [ "$(grep -cF "$warning" <<<"$err")" -eq 1 ]; then
    pass "loomrun warns once about a misspelt variable, naming the closest"
else
    fail "loomrun warns once about a misspelt variable, naming the closest" "stderr: $err"
fi

err=$(LOOM_SHM_SLOT_BYTES=8192 "$SIM" --config 2>&1 >/dev/null)
if [ -z "$err" ]; then
    pass "a declared variable does not warn"
else
    fail "a declared variable does not warn" "stderr: $err"
fi

# Every variable loomrun sets for its ranks, and a misspelt one passed through to them.
err=$(LOOM_SHM_SLOTBYTES=1 "$LOOMRUN" -n 2 --fabric ring:2 --link-stats --switch -- \
    "$SIM" --config 2>&1 >/dev/null)
status=$?
# A rank's line: loomrun's "[R] ", then the log line's time, host, pid and rank fields.
rank_warnings() {
    grep -F "rank=- loom WARN init: $warning" <<<"$err" |
        grep -cE "^\[$1\] [0-9T:.-]+Z [^ ]+ pid=[0-9]+ rank=- loom "
}
if [ "$status" -eq 0 ] && [ "$(rank_warnings 0)" -eq 1 ] && [ "$(rank_warnings 1)" -eq 1 ] &&
    [ "$(grep -c 'is not a loom parameter' <<<"$err")" -eq 3 ]; then
    pass "ranks warn once each about the misspelt variable and never about loomrun's own"
else
    mapfile -t lines <<<"$err"
    fail "ranks warn once each about the misspelt variable and never about loomrun's own" \
        "exit $status" "${lines[@]}"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
