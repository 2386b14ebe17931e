#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Back ends are reported honestly (TAP): loom_build_features() calls a back end "enabled"
# only when loom's code for it is in the tree (drivers/NAME/ with sources), and each tool's
# --version prints the library's text unchanged on its "features: " line.
#
# Usage: test_features.sh SOURCE_ROOT PATH/TO/print_features TOOL...
set -u
SRC=${1:?usage: test_features.sh SOURCE_ROOT PATH/TO/print_features TOOL...}
PRINT=${2:?usage: test_features.sh SOURCE_ROOT PATH/TO/print_features TOOL...}
shift 2
# shellcheck source=../tools/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tools/tap.sh"

features=$("$PRINT")
# One "name: state" per back end, separated by "; ".
echo "$features" | sed 's/; /\n/g' >"$tmp/backends"
for name in dpdk ofi verbs cuda; do
    line=$(grep "^$name: " "$tmp/backends")
    if [ -z "$line" ]; then
        fail "features name $name" "features: $features"
        continue
    fi
    state=${line#"$name: "}
    has_code=0
    compgen -G "$SRC/drivers/$name/*.cc" >/dev/null && has_code=1
    case "$state" in
    enabled*)
        if [ "$has_code" -eq 1 ]; then
            pass "$name: enabled, and drivers/$name has its code"
        else
            fail "$name is not called enabled without code in the tree" "$line"
        fi
        ;;
    "not built ("*")") pass "$name: $state" ;;
    *) fail "$name: its state is 'enabled (...)' or 'not built (reason)'" "$line" ;;
    esac
done

for tool in "$@"; do
    name=$(basename "$tool")
    if ! "$tool" --version >"$tmp/out" 2>"$tmp/err"; then
        fail "$name --version prints the library's features" "no --version: $(head -n 1 "$tmp/err")"
    elif grep -qxF "features: $features" "$tmp/out"; then
        pass "$name --version prints the library's features"
    else
        fail "$name --version prints the library's features" "expected: features: $features" \
            "got: $(head -c 400 "$tmp/out" | tr '\n' '|')"
    fi
done

echo "1..$n"
[ "$failures" -eq 0 ]
