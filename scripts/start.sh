#!/usr/bin/env bash
# Quick start, first command: installs what is missing, builds, and starts ddpdesk: the window
# when there is a display, else a short headless demo run (2 CPU ranks, Fashion-MNIST MLP).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
app=${DDPDESK_BUILD_DIR:-build}/app/ddpdesk
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "${1:-}" != "--headless" ]; then
  exec "$app" "$@"
fi
echo "start: no display, running a headless demo (Ctrl+C stops it gracefully)"
exec "$app" --headless --task fmnist-mlp --nproc 2 --batch-size 64 --accum-steps 2 --epochs 2 \
  --dataset-size 20000 --name demo
