#!/usr/bin/env bash
# Quick start, second command: installs what is missing, builds, and runs every test via CTest;
# then the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Each phase's wall time goes to stderr, so a CI log shows where its minutes went.
set -euo pipefail
cd "$(dirname "$0")/.."
phase_start=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - phase_start)) s" >&2; phase_start=$SECONDS; }
scripts/install-deps.sh
phase "install-deps"
scripts/build.sh
phase "build"
# Every core for ctest -j: GNU nproc answers OMP_NUM_THREADS when it is set (1 below), which
# ran the suites, and the sanitizer build, one job at a time.
export DDPDESK_JOBS=${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
export QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS=1
sanitizers=$([ "${DDPDESK_SKIP_SANITIZERS:-0}" = 1 ] && echo 0 || echo 1)
if [ "$sanitizers" = 1 ]; then
  # The sanitizer build compiles while the plain suite runs. The suite leaves most of a core idle
  # (its tests wait on worker processes, sockets, sshd and Slurm); under SCHED_IDLE the compilers
  # get only what the tests leave, so the tests run as they would alone. Its own process group,
  # ended with test.sh whichever way that goes.
  idle=(chrt --idle 0)
  "${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
  asan_log=$(mktemp /tmp/ddpdesk-asan-build-XXXXXX)
  setsid "${idle[@]}" scripts/test-sanitizers.sh --build-only >"$asan_log" 2>&1 &
  asan_build=$!
  trap 'kill -- -"$asan_build" 2>/dev/null; rm -f "$asan_log"' EXIT
  trap 'exit 143' TERM INT
fi
(cd "${DDPDESK_BUILD_DIR:-build}" &&
  ctest --output-on-failure --timeout 600 -j "$DDPDESK_JOBS" "$@")
phase "tests"
if [ "$sanitizers" = 1 ]; then
  asan_rc=0
  wait "$asan_build" || asan_rc=$?
  cat "$asan_log" >&2
  [ "$asan_rc" = 0 ] || { echo "test.sh: the sanitizer build failed (exit $asan_rc)" >&2; exit "$asan_rc"; }
  phase "sanitizer build, the part after the tests"
  scripts/test-sanitizers.sh --tests-only
  phase "sanitizer tests"
fi
echo "test.sh: all phases took $SECONDS s" >&2
