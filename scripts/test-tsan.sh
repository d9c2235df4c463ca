#!/usr/bin/env bash
# ddpdesk's threaded parts under ThreadSanitizer, in ./build-tsan: the telemetry queue and its
# sender thread with the system sampler, the TensorBoard sink's thread, the gradient-sync
# executor and the shared-memory and Gloo communicators it drives, the stop vote and the
# stop-signal thread. Only the engine, the worker and the tests below are built (no Qt, no GUI).
# Every ddpdesk process a test starts (workers included) inherits TSAN_OPTIONS: each report goes
# to a file of its own under build-tsan/tsan-reports/ and halts that process, and the script
# fails if any report was written, even from a rank that a test expects to fail (a rank killed
# on purpose, a NaN loss). Reports inside the uninstrumented system libraries (LibTorch, Gloo,
# oneDNN, OpenBLAS, libgomp) are suppressed: scripts/tsan-suppressions.txt says which and why;
# none names ddpdesk's own code. docs/development.md, "ThreadSanitizer".
#
# Extra arguments go to ctest (e.g. -R test_stop_resume).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DDPDESK_TSAN_BUILD_DIR:-build-tsan}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
. scripts/lib/compiler.sh
cxx=$(ddpdesk_cxx "${DDPDESK_TSAN_CXX:-}")
case $cxx in
  *clang++*) ;;
  *) echo "test-tsan.sh: $cxx is not clang; ThreadSanitizer is built with clang only" >&2; exit 1 ;;
esac
ddpdesk_forget_other_compiler "$dir" "$cxx"
jobs=${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}

# The CTest entries: the engine's threaded parts one by one, then real worker processes that are
# stopped (signals, the stop file, the monitor's death), killed, checkpointed while killed, held
# by a slow monitor, and that overlap their gradient buckets with backward on the executor.
tests=(
  test_grad_sync test_telemetry_system test_system_sampler test_stop_signals test_trainer
  test_stop_resume test_rank_faults test_checkpoint_faults test_slow_monitor test_accumulation
  test_system_metrics test_tensorboard_files
)
targets=(ddpdesk-worker ddpdesk_engine_tests ddpdesk_engine_plain_tests ddpdesk_integration_tests)

total_start=$SECONDS
gen=()
[ -f "$dir/CMakeCache.txt" ] || { command -v ninja >/dev/null && gen=(-G Ninja); }
# -O1 -g1 as in the ASan build (scripts/test-sanitizers.sh). No monitor, no GUI: none of these
# tests needs Qt.
cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDDPDESK_SANITIZE=thread -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DDDPDESK_ENGINE=ON -DDDPDESK_MONITOR=OFF -DDDPDESK_GUI=OFF -DDDPDESK_FUZZ=OFF >/dev/null
build_start=$SECONDS
cmake --build "$dir" --parallel "$jobs" --target "${targets[@]}"
echo "test-tsan.sh: build took $((SECONDS - build_start)) s" >&2

reports=$PWD/$dir/tsan-reports
rm -rf "$reports"
mkdir -p "$reports"
# halt_on_error: the first report ends the process (exit 66), so a test cannot pass over it.
# second_deadlock_stack: both stacks of a lock-order inversion. log_path: one file per reporting
# process (the prefix plus its pid), where nothing a test does with the process's stderr hides it.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan-suppressions.txt log_path=$reports/report"
export QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS=1
# ThreadSanitizer's fixed memory layout fails to map ("unexpected memory mapping") on a kernel
# that randomises mmap addresses with more than 28 bits; there, run without address randomisation.
run=()
if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
  run=(setarch "$(uname -m)" -R)
fi

tests_start=$SECONDS
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
status=0
(cd "$dir" && "${run[@]}" ctest --output-on-failure --timeout 900 -j "$jobs" -R "$regex" "$@") ||
  status=$?
echo "test-tsan.sh: tests took $((SECONDS - tests_start)) s" >&2
shopt -s nullglob
found=("$reports"/report*)
if [ ${#found[@]} -gt 0 ]; then
  for f in "${found[@]}"; do
    echo "=== $f" >&2
    cat "$f" >&2
  done
  echo "test-tsan.sh: ${#found[@]} process(es) reported under ThreadSanitizer (above)" >&2
  status=1
fi
echo "test-tsan.sh: all took $((SECONDS - total_start)) s" >&2
exit $status
