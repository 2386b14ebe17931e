#!/usr/bin/env bash
# `meson install` gives a usable library: installs into a scratch prefix, then builds and
# runs a C program against it through pkg-config, and runs the installed loom-sim.
set -euo pipefail
build_dir=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build_dir" --destdir "$dest" --quiet >/dev/null
prefix=$(meson introspect "$build_dir" --buildoptions |
         python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
libdir=$(meson introspect "$build_dir" --buildoptions |
         python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
root="$dest$prefix"
cat > "$dest/use_loom.c" <<'C'
#include <loom/loom.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    if (strcmp(loom_status_string(LOOM_ERR_TIMEOUT), "timeout") != 0) return 1;
    if (loom_dtype_size(LOOM_BFLOAT16) != 2) return 1;
    printf("loom %s\n", loom_version());
    return 0;
}
C
export PKG_CONFIG_PATH="$root/$libdir/pkgconfig"
# The .pc file names the configured prefix; point pkg-config at the scratch copy.
cc "$dest/use_loom.c" -o "$dest/use_loom" \
   $(pkg-config --define-variable=prefix="$root" --cflags --libs loom)
LD_LIBRARY_PATH="$root/$libdir" "$dest/use_loom"
LD_LIBRARY_PATH="$root/$libdir" "$root/bin/loom-sim" --version >/dev/null
echo "install check: ok"
