#!/usr/bin/env bash
# Quick start, second command: installs what is missing, builds, and runs every test via CTest;
# then the Torch-free suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS=1
(cd "${DDPDESK_BUILD_DIR:-build}" &&
  ctest --output-on-failure --timeout 600 -j "${DDPDESK_JOBS:-$(nproc)}" "$@")
if [ "${DDPDESK_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/test-sanitizers.sh
fi
