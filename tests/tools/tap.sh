# SPDX-License-Identifier: Apache-2.0
# TAP for the tools' script tests, sourced by each: a scratch directory $tmp (removed at
# exit), the case counter $n and $failures, pass / fail / skip, and expect_refusal. The
# script ends with
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

# expect_refusal NAME CODE PATTERN COMMAND...: COMMAND exits CODE and writes exactly one line
# on stderr, "<its program's name>: …PATTERN…", never an exception trace. stdout goes to
# $tmp/out, stderr to $tmp/err, the status to $rc.
expect_refusal() {
    local name=$1 code=$2 pattern=$3 prefix lines first
    prefix="$(basename "$4"): "
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    lines=$(wc -l <"$tmp/err")
    first=$(head -n 1 "$tmp/err")
    if [ "$rc" -ne "$code" ]; then
        fail "$name" "exit $rc, expected $code" "stderr: $(head -c 300 "$tmp/err")"
    elif [ "$lines" -ne 1 ] || [ "$(tail -c 1 "$tmp/err" | wc -l)" -ne 1 ]; then
        fail "$name" "expected exactly one line on stderr, got $lines:" "$(head -c 300 "$tmp/err")"
    elif grep -q -e "terminate called" -e "Aborted" -e "what()" "$tmp/err"; then
        fail "$name" "exception trace: $first"
    elif [[ "$first" != "$prefix"* ]] || [[ "$first" != *"$pattern"* ]]; then
        fail "$name" "stderr '$first' lacks '$prefix' or '$pattern'"
    else
        pass "$name"
    fi
}
