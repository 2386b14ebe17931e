#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# loomrun --fabric SHAPE --link-stats over TRANSPORT: the multi-process sweep through the
# forwarding driver (every collective and algorithm, the lattice ones on the fabric itself),
# then the link-counter checks of fabric_checks.hh (--fabric-checks: links only between
# neighbours, dor-relay all-to-all loads as routed, dims phases on their own dimension), and
# finally loomrun's link table: one row per link, RANKS ranks each with its NEIGHBOURS
# links.
# Usage: run_fabric.sh LOOMRUN TEST_API_MULTIPROC SHAPE RANKS TRANSPORT TIES [--light]
set -u
loomrun=$1
program=$2
shape=$3
ranks=$4
transport=$5
ties=$6
shift 6
out=$(mktemp)
trap 'rm -f "$out"' EXIT
LOOM_ROUTE_TIES=$ties "$loomrun" -n "$ranks" --fabric "$shape" --transport "$transport" \
    --link-stats --timeout 400 -- "$program" --from-env --fabric-checks "$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then
    echo "run_fabric: loomrun exited $rc ($shape over $transport, ties $ties)" >&2
    exit "$rc"
fi
# Every rank printed its summary and the table lists every rank with at least one link.
awk -v ranks="$ranks" '
    / of [0-9]+: [0-9]+ checks, 0 failed/ { passed++ }
    /^link stats/ { table = 1; next }
    table && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { links[$1]++ }
    END {
        if (passed != ranks) { print passed + 0 " of " ranks " ranks reported 0 failed"; exit 1 }
        if (!table) { print "no link table printed"; exit 1 }
        for (r = 0; r < ranks; r++) {
            if (links[r] < 1) { print "rank " r " has no row in the link table"; exit 1 }
        }
    }' "$out" || { echo "run_fabric: the run summary or link table is wrong" >&2; exit 1; }
echo "run_fabric: $shape over $transport ($ties): sweep, link checks and link table passed"
