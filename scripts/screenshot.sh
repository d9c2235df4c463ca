#!/usr/bin/env bash
# screenshot.sh [out.png]: runs the ddpdesk window under Xvfb against a real, short CPU run of the
# real worker (Fashion-MNIST MLP, 2 ranks), waits, and saves a screenshot (docs/screenshot.png by
# default). Builds nothing: point it at built binaries.
#   BUILD_DIR        where app/ddpdesk and app/ddpdesk-worker are (default: build)
#   DDPDESK_BIN      the GUI binary (default: $BUILD_DIR/app/ddpdesk)
#   DDPDESK_WORKER   the worker binary (default: $BUILD_DIR/app/ddpdesk-worker)
#   SCREENSHOT_WAIT  seconds between the start and the screenshot (default 9)
# Needs xvfb-run (xvfb) and import (imagemagick). The run lives in a temporary data directory, so
# the user's history is untouched.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
gui=${DDPDESK_BIN:-$build/app/ddpdesk}
export DDPDESK_WORKER=${DDPDESK_WORKER:-$build/app/ddpdesk-worker}
out=${1:-$root/docs/screenshot.png}
wait_s=${SCREENSHOT_WAIT:-9}
size=1600x1000

for tool in xvfb-run import; do
  command -v "$tool" >/dev/null || { echo "screenshot.sh: $tool not found" >&2; exit 1; }
done
for bin in "$gui" "$DDPDESK_WORKER"; do
  [ -x "$bin" ] || { echo "screenshot.sh: $bin not found or not executable" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_DATA_HOME=$tmp/data XDG_CONFIG_HOME=$tmp/config XDG_RUNTIME_DIR=$tmp/run
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
export OMP_NUM_THREADS=1 QT_QPA_PLATFORM=xcb
mkdir -p "$(dirname "$out")"

# Inside the virtual display: the window at the screen's size, a run started at once (--start),
# the screenshot, then a graceful end (SIGTERM to the GUI; its ranks stop with it).
xvfb-run -a -s "-screen 0 ${size}x24 -nolisten tcp" bash -c '
  set -u
  "$0" -geometry "$1+0+0" --task fmnist-mlp --nproc 2 --batch-size 64 --accum-steps 2 \
    --dataset-size 12000 --epochs 40 --lr 0.001 --log-interval 2 --name screenshot --start \
    >"$4/gui.log" 2>&1 &
  gui=$!
  sleep "$2"
  import -window root "png:$3"
  kill -TERM "$gui" 2>/dev/null
  wait "$gui" 2>/dev/null || true
' "$gui" "$size" "$wait_s" "$out" "$tmp"
sleep 2  # the ranks finish their graceful stop
echo "screenshot.sh: wrote $out ($(du -h "$out" | cut -f1))"
