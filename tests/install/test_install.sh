#!/bin/sh
# `cmake --install` into a staging directory (DESTDIR), then the installed tree on its own: the
# layout a desktop expects, no installed file that names the build tree, and from a working
# directory elsewhere (with the source and build trees hidden behind empty mounts where this
# machine allows a private mount namespace) the worker's --probe, a two-rank headless demo, whose
# ranks must be the installed worker found beside the installed ddpdesk, and the installed Python
# client imported by a script that logs a step into its run directory.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$(cd "$1" && pwd -P)
src=$(cd "$2" && pwd -P)
stage=$(mktemp -d "${TMPDIR:-/tmp}/ddpdesk-install-XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
fmnist=${DDPDESK_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
[ -d "$fmnist" ] || { echo "SKIP: the demo needs dataset-fashion-mnist ($fmnist)"; exit 0; }

DESTDIR="$stage/root" cmake --install "$build" --prefix /usr >"$stage/install.log" 2>&1 ||
  { cat "$stage/install.log" >&2; fail "cmake --install"; }
usr="$stage/root/usr"
for f in bin/ddpdesk bin/ddpdesk-worker bin/ddpdesk-rank share/applications/ddpdesk.desktop \
  share/icons/hicolor/scalable/apps/ddpdesk.svg share/icons/hicolor/64x64/apps/ddpdesk.png \
  share/ddpdesk/presets/fmnist-mlp-2cpu.json share/ddpdesk/python/ddpdesk/__init__.py; do
  [ -e "$usr/$f" ] || fail "not installed: /usr/$f"
done
[ -x "$usr/bin/ddpdesk" ] && [ -x "$usr/bin/ddpdesk-worker" ] || fail "binaries not executable"
# The launcher entry starts the installed binary by name and names the themed icon.
grep -qx 'Exec=ddpdesk' "$usr/share/applications/ddpdesk.desktop" || fail "desktop file Exec"
grep -qx 'Icon=ddpdesk' "$usr/share/applications/ddpdesk.desktop" || fail "desktop file Icon"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$usr/share/applications/ddpdesk.desktop" || fail "desktop-file-validate"
fi
# Nothing installed may point back into the build or source tree (an RPATH, a compiled-in path).
if grep -rlF -e "$build" -e "$src" "$stage/root"; then fail "installed files name $build or $src"; fi

home="$stage/home"
mkdir -p "$home"
cat >"$stage/run.sh" <<RUN
set -eu
cd "$home"
export HOME="$home" XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config"
unset DDPDESK_WORKER
"$usr/bin/ddpdesk-worker" --probe >"$stage/probe.out"
# The Python client from the installed tree alone: a rank's import, a log, its metrics file.
if command -v python3 >/dev/null; then
  mkdir -p "$home/pyrun"
  PYTHONPATH="$usr/share/ddpdesk/python" PYTHONDONTWRITEBYTECODE=1 DDPDESK_RUN_DIR="$home/pyrun" \
    python3 -c 'import ddpdesk, sys; assert ddpdesk.__file__.startswith(sys.argv[1]), ddpdesk.__file__; ddpdesk.log(step=1, loss=0.5)' \
    "$usr/share/ddpdesk/python/" >"$stage/python.out" 2>&1 || true  # said below
fi
"$usr/bin/ddpdesk" --headless --nproc 2 --task fmnist-mlp --dataset-size 1024 --batch-size 64 \
  --log-interval 2 --epochs 1 >"$stage/demo.out" 2>"$stage/demo.err"
RUN
if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
  echo "running with $src and $build hidden (private mount namespace)"
  unshare --mount --propagation private sh -c \
    "mount -t tmpfs none '$build' && mount -t tmpfs none '$src' && sh '$stage/run.sh'" ||
    { cat "$stage/demo.err" >&2 2>/dev/null; fail "installed tree did not run"; }
else
  echo "running from $home (no private mount namespace here: trees not hidden)"
  sh "$stage/run.sh" || { cat "$stage/demo.err" >&2 2>/dev/null; fail "installed tree did not run"; }
fi

grep -q '"torch_version"' "$stage/probe.out" || fail "--probe gave: $(cat "$stage/probe.out")"
if command -v python3 >/dev/null; then
  grep -q '"type":"step","rank":0,"epoch":0,"step":1,"loss":0.5' "$home/pyrun/metrics/rank-0.jsonl" ||
    fail "the installed Python client wrote no step: $(cat "$stage/python.out")"
else
  echo "no python3 here: the installed Python client was not run"
fi
grep -q "started 2 rank(s) of $usr/bin/ddpdesk-worker," "$stage/demo.err" ||
  fail "ranks were not the installed worker: $(grep started "$stage/demo.err")"
grep -q '^finished after' "$stage/demo.out" || { cat "$stage/demo.out" >&2; fail "demo did not finish"; }
grep -q 'samples/s per rank' "$stage/demo.out" || fail "no throughput line in the summary"
ls "$home/data/ddpdesk/runs/"*fmnist-mlp*/status.json >/dev/null || fail "no run directory in \$XDG_DATA_HOME"
echo "installed tree OK: $(grep 'samples/s per rank' "$stage/demo.out")"
