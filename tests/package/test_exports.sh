#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libloom.so exports exactly the C API (TAP): every dynamic symbol it defines is a function
# declared LOOM_API in loom.h, each at version LOOM_0.1, and every such function is there.
#
# Usage: test_exports.sh PATH/TO/libloom.so PATH/TO/loom.h
set -u
LIB=${1:?usage: test_exports.sh PATH/TO/libloom.so PATH/TO/loom.h}
HEADER=${2:?usage: test_exports.sh PATH/TO/libloom.so PATH/TO/loom.h}
# shellcheck source=../tools/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tools/tap.sh"

# NAME@@VERSION of each defined dynamic symbol (nm -D prints "address type name").
nm -D --defined-only "$LIB" | awk '{print $3}' | sort >"$tmp/exported"
sed 's/@.*//' "$tmp/exported" | sort -u >"$tmp/names"
grep -o 'LOOM_API[^(]*(' "$HEADER" | grep -o 'loom_[a-z_0-9]*($' | tr -d '(' | sort -u >"$tmp/api"

if [ ! -s "$tmp/api" ]; then
    fail "loom.h declares its functions with LOOM_API" "no LOOM_API declaration found in $HEADER"
else
    pass "loom.h declares $(wc -l <"$tmp/api") functions with LOOM_API"
fi

# The version definition itself (LOOM_0.1) is a defined symbol of type A; it is not code.
extra=$(comm -23 "$tmp/names" "$tmp/api" | grep -vx 'LOOM_0.1')
if [ -n "$extra" ]; then
    fail "libloom.so exports nothing but the C API" \
        "$(echo "$extra" | wc -l) other symbols, e.g. $(echo "$extra" | head -n 5 | tr '\n' ' ')"
else
    pass "libloom.so exports nothing but the C API"
fi

missing=$(comm -13 "$tmp/names" "$tmp/api")
if [ -n "$missing" ]; then
    fail "libloom.so exports every LOOM_API function" "missing: $(echo "$missing" | tr '\n' ' ')"
else
    pass "libloom.so exports every LOOM_API function"
fi

unversioned=$(grep '^loom_' "$tmp/exported" | grep -v '@@LOOM_0\.1$')
if [ -n "$unversioned" ]; then
    fail "every exported function has version LOOM_0.1" "$(echo "$unversioned" | head -n 5 | tr '\n' ' ')"
else
    pass "every exported function has version LOOM_0.1"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
