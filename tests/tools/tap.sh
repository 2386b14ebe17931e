# TAP for the tools' script tests, sourced by each: a scratch directory $tmp (removed at
# exit), the case counter $n and $failures, and pass / fail / skip. The script ends with
#   echo "1..$n"; [ "$failures" -eq 0 ]
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failures=0

# pass NAME
pass() {
    n=$((n + 1))
    echo "ok $n - $1"
}
# fail NAME [DETAIL...]: each detail line as a TAP comment.
fail() {
    n=$((n + 1))
    failures=$((failures + 1))
    echo "not ok $n - $1"
    shift
    local line
    for line in "$@"; do
        echo "# $line"
    done
}
# skip NAME REASON: counted as a skip, not a pass.
skip() {
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}
