#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs loom's libFuzzer targets (fuzz/). Usage:
#   scripts/fuzz.sh [--ci] [SECONDS] [TARGET...]
# SECONDS per target (default 600; --ci: 10); TARGET names as in fuzz/meson.build
# (fuzz_packet …; default all). Each target runs over a copy of its seed corpus
# (fuzz/corpus/<name without fuzz_>/), with its dictionary when fuzz/dict has one; crash,
# leak and timeout inputs go to results/fuzz/<target>/. Prints "<target>: N execs, K crashes"
# per target and exits 1 when any target crashed. Installs clang and the libFuzzer runtime
# when missing (idempotent) and builds in build-fuzz (CC=clang CXX=clang++, -Dfuzz=true).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
if [ "${1:-}" = "--ci" ]; then
    seconds=10
    shift
fi
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    seconds=$1
    shift
fi
all_targets=(fuzz_packet fuzz_schedule_text fuzz_schedule_json fuzz_calibration fuzz_fabric
             fuzz_bench_baseline fuzz_cli_loom_sim fuzz_cli_loom_bench fuzz_cli_loomrun
             fuzz_cli_loom_switch fuzz_ctld_api)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

# clang-14 and its runtime: libclang_rt.fuzzer ships in libclang-rt-14-dev on Debian 12.
scripts/install_packages.sh clang libclang-rt-14-dev

build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$build" --werror -Dfuzz=true -Dtests=false >/dev/null
fi
ninja -C "$build" "${targets[@]/#/fuzz/}" >/dev/null

results=results/fuzz
failed=0
for t in "${targets[@]}"; do
    name=${t#fuzz_}
    out=$results/$t
    rm -rf "$out"
    mkdir -p "$out/corpus"
    if [ -d "fuzz/corpus/$name" ]; then
        cp -r "fuzz/corpus/$name/." "$out/corpus/"
    fi
    dict=()
    [ -f "fuzz/dict/$name.dict" ] && dict=(-dict="fuzz/dict/$name.dict")
    set +e
    "$build/fuzz/$t" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" >"$out/log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
    crashes=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
        -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
        crashes=1  # died without an artifact (e.g. the build's sanitizer aborted at start)
    fi
    echo "$t: ${execs:-0} execs, $crashes crashes"
    if [ "$crashes" -ne 0 ]; then
        failed=1
        echo "  see $out/log and the inputs in $out/" >&2
    fi
done
exit $failed
