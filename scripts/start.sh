#!/usr/bin/env bash
# Quick start, first command: installs what building and running need (nothing only the tests
# use), builds ddpdesk without its tests and without their fault injection, and starts it: the
# window when there is a display, else a short headless demo run (2 CPU ranks, Fashion-MNIST
# MLP). After scripts/test.sh, which builds the same ./build with both, this builds it back.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DDDPDESK_TESTS=OFF -DDDPDESK_FAULT_INJECTION=OFF
app=${DDPDESK_BUILD_DIR:-build}/app/ddpdesk
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ "${1:-}" != "--headless" ]; then
  exec "$app" "$@"
fi
echo "start: no display, running a headless demo (Ctrl+C stops it gracefully)"
exec "$app" --headless --task fmnist-mlp --nproc 2 --batch-size 64 --accum-steps 2 --epochs 2 \
  --dataset-size 20000 --name demo
