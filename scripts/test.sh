#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: formatting and include-direction checks, the regular build's tests,
# and the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then every
# libFuzzer target for a short run over its corpus (scripts/fuzz.sh --ci), and the DPU
# firmware cross-built for arm64, run under qemu-user and packaged. Ends with one line
# "N passed, N failed, N skipped" over every test case; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
started=$SECONDS
# Each phase's header carries the minutes since the start, so a slow CI run shows where its
# time went (the whole run must stay under an hour on 2 cores).
phase() { printf '== [%3d min] %s\n' $(((SECONDS - started) / 60)) "$*"; }

scripts/setup.sh build || exit 1
phase "clang-format check"
git ls-files '*.cc' '*.hh' '*.h' '*.c' | xargs clang-format --dry-run -Werror || status=1
phase "include-direction check (docs/architecture.md#layout)"
python3 scripts/check_includes.py || status=1
phase "documentation check (links, anchors, citations: scripts/check_docs.py)"
python3 scripts/check_docs.py || status=1
phase "license lines (scripts/check_spdx.py)"
python3 scripts/check_spdx.py || status=1

phase "warnings are errors in the project's builds (meson.build leaves -Werror to them)"
grep -q -e ' -Werror ' build/compile_commands.json ||
    { echo "build: compiled without -Werror" >&2; status=1; }

phase "tests (debugoptimized build)"
meson test -C build --print-errorlogs --num-processes 2 || status=1

phase "install check (meson install; pkg-config shared and static, CMake, the tools)"
tests/install/check_install.sh build || status=1

phase "tests (address,undefined sanitizers)"
# -O1 and line tables only (-g1): what the sanitizers' reports need (file and line in every
# frame), and less than half the compile time of -O2 -g, which made this build alone about
# 23 of the run's minutes on 2 cores.
scripts/setup.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
    -Doptimization=1 -Dcpp_args=-g1 -Dc_args=-g1 || exit 1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes 2 || status=1

phase "fuzzers (libFuzzer, 10 s per target over its checked-in corpus)"
scripts/fuzz.sh --ci || status=1

phase "arm64: loom-dpu cross-built, run under qemu-user, packaged (scripts/cross_arm64.sh)"
{ scripts/cross_arm64.sh build-arm64 && packaging/dpu/build_deb.sh build-arm64; } || status=1

phase "summary (test cases)"
python3 scripts/summarize_tests.py build/meson-logs/testlog.json \
    build-asan/meson-logs/testlog.json || status=1
phase "end (status $status)"
exit $status
