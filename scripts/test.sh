#!/usr/bin/env bash
# Quick start, second command: installs what is missing (the test-only packages too: Slurm,
# munge, an ssh server, clang, ...), builds ./build with the tests and the worker's test-only
# fault injection (docs/environment.md), and runs every test via CTest; then the whole suite
# again under AddressSanitizer + UndefinedBehaviorSanitizer in ./build-asan.
# Each phase's wall time goes to stderr, so a CI log shows where its minutes went.
set -euo pipefail
cd "$(dirname "$0")/.."
phase_start=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - phase_start)) s" >&2; phase_start=$SECONDS; }
scripts/install-deps.sh --tests
phase "install-deps"
scripts/build.sh -DDDPDESK_TESTS=ON -DDDPDESK_FAULT_INJECTION=ON
phase "build"
# Every core for ctest -j: GNU nproc answers OMP_NUM_THREADS when it is set (1 below), which
# ran the suites, and the sanitizer build, one job at a time.
export DDPDESK_JOBS=${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
export QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS=1
(cd "${DDPDESK_BUILD_DIR:-build}" &&
  ctest --output-on-failure --timeout 600 -j "$DDPDESK_JOBS" "$@")
phase "tests"
if [ "${DDPDESK_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/test-sanitizers.sh
  phase "sanitizer build and tests"
fi
echo "test.sh: all phases took $SECONDS s" >&2
