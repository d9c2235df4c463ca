#!/usr/bin/env bash
# The whole test suite — engine unit tests, integration tests with real worker processes, the
# monitor, the GUI, the fuzz corpus — built and run under AddressSanitizer +
# UndefinedBehaviorSanitizer, in ./build-asan. Debian's LibTorch itself is not instrumented; our
# code around it (datasets, sampler, communicators, gradient sync, checkpoints, telemetry, the
# wire decoder, metrics server and RunSpec parser that take hostile input) is. Every ddpdesk
# process a test starts (workers included) inherits the options below: any report aborts it and
# fails its test.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${DDPDESK_ASAN_BUILD_DIR:-build-asan}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
. scripts/lib/compiler.sh
cxx=$(ddpdesk_cxx "${DDPDESK_ASAN_CXX:-}")
ddpdesk_forget_other_compiler "$dir" "$cxx"
# clang also builds the libFuzzer targets here, for the suite's short fuzz runs.
fuzz=OFF
case $cxx in *clang++*) fuzz=ON ;; *) echo "test-sanitizers.sh: $cxx is not clang: no fuzz runs" >&2 ;; esac
gen=()
[ -f "$dir/CMakeCache.txt" ] || { command -v ninja >/dev/null && gen=(-G Ninja); }
# -O1 -g1: sanitizers need no more, and LibTorch translation units compile and link much faster
# with line tables only than with full debug info.
# test_user_task's Python fixtures and PyTorch references (keyed by scripts and arguments; no
# build of ddpdesk changes them) are shared with the plain build's run, which made them already.
cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDPDESK_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DDDPDESK_PYTHON_RESULTS_DIR="$(realpath -m "${DDPDESK_BUILD_DIR:-build}")/python-results" \
  -DDDPDESK_ENGINE=ON -DDDPDESK_MONITOR=ON -DDDPDESK_GUI=ON -DDDPDESK_FUZZ=$fuzz >/dev/null
build_start=$SECONDS
cmake --build "$dir" --parallel "${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
echo "test-sanitizers.sh: build took $((SECONDS - build_start)) s" >&2
export QT_QPA_PLATFORM=offscreen ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$dir"
# In parallel like the plain suite: tests whose timing matters carry RUN_SERIAL.
# Entries labelled python_only run no C++ of ours (the Python client's unit tests, the docs'
# links): the plain suite ran them, the sanitizers would find nothing in them. Entries labelled
# plain_only run C++ that other entries of this suite run too, through a slower harness (Debian's
# torchrun, a login node over ssh, Python ranks): tests/integration/CMakeLists.txt says which
# entry covers each.
ctest --output-on-failure --timeout 900 -j "${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" \
  -LE "python_only|plain_only" "$@"
