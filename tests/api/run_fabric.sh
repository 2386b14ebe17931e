#!/bin/sh
# loomrun --fabric torus:2x2x2 --link-stats: the multi-process sweep through the forwarding
# driver, then a check of loomrun's link table: every rank lists exactly its three torus
# neighbours (rank r: r^1, r^2, r^4), and nothing else. --light: without the 4194305-element
# count, whose alltoalls can stall the forwarding driver (drivers/forward/forward.hh).
# Usage: run_fabric.sh LOOMRUN TEST_API_MULTIPROC [ARGS...]
set -u
loomrun=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$loomrun" -n 8 --fabric torus:2x2x2 --link-stats --timeout 170 -- "$@" --from-env --light >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then
    echo "run_fabric: loomrun exited $rc" >&2
    exit "$rc"
fi
awk '
    function bxor(a, b,    x, bit) {
        x = 0
        for (bit = 1; a > 0 || b > 0; bit *= 2) {
            if ((a % 2) != (b % 2)) x += bit
            a = int(a / 2); b = int(b / 2)
        }
        return x
    }
    /^link stats/ { table = 1; next }
    table && $1 == "rank" { next }
    table && $1 ~ /^[0-9]+$/ {
        r = $1
        if ($2 !~ /^[0-9]+$/) { print "rank " r " wrote no link counters"; bad = 1; next }
        p = $2; x = bxor(r, p)
        if (x != 1 && x != 2 && x != 4) { print "rank " r ": link to non-neighbour " p; bad = 1 }
        if (seen[r, p]++) { print "rank " r ": link to " p " listed twice"; bad = 1 }
        links[r]++
    }
    END {
        if (!table) { print "no link table printed"; exit 1 }
        for (r = 0; r < 8; r++) {
            if (links[r] != 3) { print "rank " r ": " links[r] + 0 " links, expected 3"; bad = 1 }
        }
        exit bad
    }' "$out" || { echo "run_fabric: the link table is wrong" >&2; exit 1; }
echo "run_fabric: link table lists exactly the torus:2x2x2 neighbour pairs"
