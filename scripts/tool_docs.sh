#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The reference pages of the tools (docs/tools/<tool>.md) carry each tool's --help as the
# tool prints it, never copied by hand. This script puts every page's help between its two
# "help" markers, or with --check says which page differs from its tool.
# Usage: scripts/tool_docs.sh [--check] [BUILD_DIR [DOCS_TOOLS_DIR]]
#   default BUILD_DIR: build under the repository; DOCS_TOOLS_DIR: docs/tools.
# Exit status: 0 in step (or rewritten); 1 a page differs (--check); 2 bad setup.
set -euo pipefail

check=0
if [ "${1:-}" = --check ]; then
    check=1
    shift
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
pages=${2:-$root/docs/tools}
begin='<!-- help: generated from the tool by scripts/tool_docs.sh; do not edit -->'
end='<!-- end of help -->'

# The commands whose --help each page shows: the tool, then its verbs.
commands() {
    case $1 in
    loom-sim)
        echo "loom-sim"
        for verb in algorithms schedule verify predict overview run compare topology explain; do
            echo "loom-sim $verb"
        done
        ;;
    loom-switch) printf '%s\n' "loom-switch" "loom-switch ticket" ;;
    loomctl) printf '%s\n' "loomctl" "loomctl status" "loomctl members" ;;
    *) echo "$1" ;;
    esac
}

# Only the tool's own text: no LOOM_* value of this shell may change it.
help_block() {
    local tool=$1 binary=$2 cmd
    while read -r cmd; do
        local args=${cmd#"$tool"}
        echo '```text'
        echo "\$ $cmd --help"
        # shellcheck disable=SC2086 # the verb is one word
        env -i PATH="$PATH" "$binary" $args --help 2>&1
        echo '```'
    done < <(commands "$tool")
}

status=0
for tool in loom-sim loom-bench loomrun loom-switch loom-dpu loom-ctld loomctl; do
    binary=$build/tools/$tool/$tool
    page=$pages/$tool.md
    # The control plane's tools are built only where cpp-httplib is (tools/meson.build).
    if [ ! -x "$binary" ] && { [ "$tool" = loom-ctld ] || [ "$tool" = loomctl ]; }; then
        echo "tool_docs.sh: $tool is not built (no cpp-httplib): $page is not checked" >&2
        continue
    fi
    # loom-dpu is built only with the dpdk driver (tools/loom-dpu/meson.build).
    if [ ! -x "$binary" ] && [ "$tool" = loom-dpu ]; then
        echo "tool_docs.sh: $tool is not built (no libdpdk): $page is not checked" >&2
        continue
    fi
    if [ ! -x "$binary" ]; then
        echo "tool_docs.sh: no $tool at $binary (build it, or pass the build directory)" >&2
        exit 2
    fi
    if ! grep -qxF -- "$begin" "$page" || ! grep -qxF -- "$end" "$page"; then
        echo "tool_docs.sh: $page lacks the help markers" >&2
        exit 2
    fi
    block=$(help_block "$tool" "$binary")
    current=$(awk -v b="$begin" -v e="$end" '$0 == e {inside = 0} inside {print} $0 == b {inside = 1}' "$page")
    if [ "$check" -eq 1 ]; then
        if [ "$block" != "$current" ]; then
            echo "tool_docs.sh: $page differs from $tool --help; run scripts/tool_docs.sh" >&2
            diff <(echo "$current") <(echo "$block") >&2 || true
            status=1
        fi
        continue
    fi
    tmp=$(mktemp)
    # The block through the environment: awk -v would interpret its backslashes.
    BLOCK=$block awk -v b="$begin" -v e="$end" '
        $0 == b {print; print ENVIRON["BLOCK"]; skip = 1; next}
        $0 == e {skip = 0}
        !skip {print}' "$page" >"$tmp"
    cat "$tmp" >"$page"
    rm -f "$tmp"
done
exit $status
