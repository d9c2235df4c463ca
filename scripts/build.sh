#!/usr/bin/env bash
# Configures and builds ddpdesk into ./build (or $DDPDESK_BUILD_DIR). Extra args go to cmake.
# Then, unless it is a test build, the CUDA worker when a CUDA LibTorch is found (the PyTorch of
# the python3 in use, or DDPDESK_LIBTORCH=<unpacked LibTorch archive>; DDPDESK_CUDA=off skips
# the search): built in <build>/cuda-worker and placed as <build>/app/ddpdesk-worker-cuda, which
# the window and headless runs start instead of the CPU worker (docs/gpu.md). No CUDA LibTorch:
# the CPU build alone, and one line saying why. DDPDESK_WORKER_ONLY=1 builds the CUDA worker
# alone (a GPU machine without Qt) and fails when there is no CUDA LibTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${DDPDESK_BUILD_DIR:-build}
# ccache with paths relative to the checkout, so a fresh clone (CI) reuses earlier compiles.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
. scripts/lib/compiler.sh
cxx=$(ddpdesk_cxx "${DDPDESK_CXX:-}")
ddpdesk_forget_other_compiler "$build_dir" "$cxx"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# LibTorch translation units need ~1.5 GiB each; two at a time fits every machine we target.
jobs=${DDPDESK_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
worker_only=${DDPDESK_WORKER_ONLY:-0}
if [ "$worker_only" != 1 ]; then
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$cxx" "$@"
  elif [ $# -gt 0 ]; then
    cmake "$build_dir" "$@"
  fi
  cmake --build "$build_dir" --parallel "$jobs"
fi

cuda_worker=$build_dir/app/ddpdesk-worker-cuda
if [ "$worker_only" != 1 ] && { [ "${DDPDESK_CUDA:-auto}" = off ] ||
  grep -q '^DDPDESK_TESTS:BOOL=ON' "$build_dir/CMakeCache.txt"; }; then
  rm -f "$cuda_worker"  # the tests run the CPU worker, with their fault injection
  exit 0
fi
. scripts/lib/cuda_torch.sh
if ! ddpdesk_find_cuda_torch; then
  rm -f "$cuda_worker"
  echo "build: no CUDA worker: $cuda_torch_why (docs/gpu.md)"
  if [ "$worker_only" = 1 ]; then exit 1; fi
  exit 0
fi
echo "build: the CUDA worker, against $cuda_torch_what"
extra=()
[ -n "${DDPDESK_EXTRA_INCLUDE:-}" ] && extra+=(-DDDPDESK_EXTRA_INCLUDE="$DDPDESK_EXTRA_INCLUDE")
# The system's C++ compiler, as PyTorch's own builds use; LibTorch's flags (its C++ ABI
# included) come with its CMake package. No Qt, no tests, no fault injection.
# Its output goes to a log: a CUDA worker that does not build (a CUDA toolkit LibTorch's CMake
# package wants, say) leaves the CPU build working and says so, except in DDPDESK_WORKER_ONLY.
mkdir -p "$build_dir/app"
log=$build_dir/cuda-worker.log
if ! {
  cmake -S . -B "$build_dir/cuda-worker" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DDDPDESK_MONITOR=OFF -DDDPDESK_GUI=OFF -DDDPDESK_TESTS=OFF -DDDPDESK_FAULT_INJECTION=OFF \
    -DDDPDESK_NCCL=ON -DCMAKE_PREFIX_PATH="$cuda_torch_prefix" \
    -DNCCL_INCLUDE_DIR="$cuda_nccl_inc" -DNCCL_LIBRARY="$cuda_nccl_lib" \
    -DCUDART_INCLUDE_DIR="$cuda_cudart_inc" -DCUDART_LIBRARY="$cuda_cudart_lib" "${extra[@]}" &&
    cmake --build "$build_dir/cuda-worker" --parallel "$jobs" --target ddpdesk-worker
} >"$log" 2>&1; then
  rm -f "$cuda_worker"
  grep -E -m 5 "error|Error" "$log" || tail -n 5 "$log"
  echo "build: the CUDA worker did not build (log: $log); runs use the CPU worker (docs/gpu.md)"
  if [ "$worker_only" = 1 ]; then exit 1; fi
  exit 0
fi
cp -f "$build_dir/cuda-worker/app/ddpdesk-worker" "$cuda_worker"
echo "build: $cuda_worker ($("$cuda_worker" --probe 2>/dev/null | tail -n 1 | cut -c1-160))"
