#!/bin/sh
# The Debian package from CPack: it builds, holds the installed layout (the Python client too),
# and its Depends names the Debian package of every shared library the two binaries link (dpkg -S
# of each DT_NEEDED entry as the loader resolves it), and recommends the data set. A library no
# Debian package owns (NCCL/CUDA from /usr/local/cuda) cannot be depended on: the package check is
# then reported as skipped, after every library that is packaged was checked.
# Usage: test_package.sh BUILD_DIR
set -eu
build=$(cd "$1" && pwd -P)
stage=$(mktemp -d "${TMPDIR:-/tmp}/ddpdesk-package-XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$stage" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$stage/out" >"$stage/cpack.log" 2>&1) ||
  { cat "$stage/cpack.log" >&2; fail "cpack -G DEB"; }
deb=$(ls "$stage"/out/ddpdesk_*.deb) || fail "no .deb in $stage/out"
dpkg-deb --contents "$deb" >"$stage/contents"
for f in ./usr/bin/ddpdesk ./usr/bin/ddpdesk-worker ./usr/bin/ddpdesk-rank ./usr/share/applications/ddpdesk.desktop \
  ./usr/share/icons/hicolor/scalable/apps/ddpdesk.svg ./usr/share/ddpdesk/presets/fmnist-mlp-2cpu.json \
  ./usr/share/ddpdesk/python/ddpdesk/__init__.py ./usr/share/ddpdesk/python/ddpdesk/_client.py \
  ./usr/share/doc/ddpdesk/copyright; do
  grep -q " $f\$" "$stage/contents" || fail "$f not in the package"
done
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/ddpdesk/copyright | grep -q '^License: GPL-3+$' ||
  fail "the package's copyright file does not name GPL-3+"
depends=$(dpkg-deb -f "$deb" Depends)
dpkg-deb -f "$deb" Recommends | grep -qw dataset-fashion-mnist || fail "Recommends lacks dataset-fashion-mnist"
echo "Depends: $depends"
# Package names in Depends, alternatives included, versions dropped.
echo "$depends" | tr ',|' '\n\n' | sed 's/(.*)//; s/[[:space:]]//g; /^$/d' | sort -u >"$stage/named"

unowned=""
for bin in ddpdesk ddpdesk-worker ddpdesk-rank; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$stage" "./usr/bin/$bin"
  for lib in $(readelf -d "$stage/usr/bin/$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    # "libx.so => /path (addr)", or for the dynamic loader itself "/lib64/ld-linux….so.2 (addr)".
    path=$(ldd "$stage/usr/bin/$bin" |
      awk -v l="$lib" '$1 == l && $2 == "=>" { print $3 } $1 ~ ("/" l "$") { print $1 }' | head -1)
    [ -n "$path" ] && [ -e "$path" ] || fail "$bin: $lib not found by the loader"
    pkg=$(dpkg -S "$(realpath "$path")" 2>/dev/null | head -1 | cut -d: -f1) || pkg=""
    if [ -z "$pkg" ]; then
      pkg=$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1) || pkg=""
    fi
    if [ -z "$pkg" ]; then
      unowned="$unowned $lib($path)"
      continue
    fi
    grep -qx "$pkg" "$stage/named" || fail "$bin links $lib from $pkg, which Depends does not name"
    echo "$bin: $lib -> $pkg"
  done
done
if [ -n "$unowned" ]; then
  echo "SKIP: this build links libraries no Debian package owns:$unowned;" \
    "a package build configures -DDDPDESK_NCCL=OFF"
  exit 0
fi
echo "package OK: $(basename "$deb")"
