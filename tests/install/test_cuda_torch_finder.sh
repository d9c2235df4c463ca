#!/usr/bin/env bash
# scripts/lib/cuda_torch.sh and scripts/build.sh's CUDA-worker step, on a machine without a CUDA
# PyTorch: every way of finding none gives one line saying why and leaves the CPU build alone;
# a LibTorch archive with CUDA and NCCL beside it is found with each path it needs. (The CUDA
# build itself runs on a GPU machine: tests/gpu/run_gpu_check.sh.)
#   test_cuda_torch_finder.sh SOURCE_DIR
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect WHAT GOT WANT-SUBSTRING
  case "$2" in
    *"$3"*) echo "ok: $1" ;;
    *) echo "FAIL: $1: got '$2', want it to hold '$3'"; fails=$((fails + 1)) ;;
  esac
}
. "$src/scripts/lib/cuda_torch.sh"

DDPDESK_PYTHON=/usr/bin/python3 ddpdesk_find_cuda_torch
expect "Debian's PyTorch is a CPU build" "rc=$? $cuda_torch_why" "rc=1 the PyTorch 1.13"
expect "... named with its interpreter" "$cuda_torch_why" "of /usr/bin/python3 has no CUDA"
printf '#!/bin/sh\nexit 1\n' >"$tmp/python-without-torch" && chmod +x "$tmp/python-without-torch"
DDPDESK_PYTHON=$tmp/python-without-torch ddpdesk_find_cuda_torch
expect "a python without torch" "rc=$? $cuda_torch_why" "rc=1 $tmp/python-without-torch has no PyTorch"
DDPDESK_PYTHON=no-such-python ddpdesk_find_cuda_torch
expect "no python at all" "rc=$? $cuda_torch_why" "rc=1 no no-such-python on PATH"
DDPDESK_LIBTORCH=$tmp ddpdesk_find_cuda_torch
expect "DDPDESK_LIBTORCH that is no LibTorch" "rc=$? $cuda_torch_why" "rc=1 DDPDESK_LIBTORCH=$tmp holds no LibTorch"
lt=$tmp/libtorch
mkdir -p "$lt/share/cmake/Torch" "$lt/lib" "$lt/include"
touch "$lt/share/cmake/Torch/TorchConfig.cmake"
DDPDESK_LIBTORCH=$lt ddpdesk_find_cuda_torch
expect "a CPU LibTorch archive" "rc=$? $cuda_torch_why" "rc=1 the LibTorch in DDPDESK_LIBTORCH=$lt has no CUDA"
touch "$lt/lib/libtorch_cuda.so"
echo 2.5.1+cu124 >"$lt/build-version"
DDPDESK_LIBTORCH=$lt CUDA_HOME=$tmp/none NCCL_LIBRARY= CUDART_LIBRARY= ddpdesk_find_cuda_torch
rc=$?
if ls /usr/lib/x86_64-linux-gnu/libnccl.so* /usr/lib/x86_64-linux-gnu/libcudart.so* >/dev/null 2>&1; then
  echo "ok: (this machine has NCCL and CUDA runtime libraries: the case without them is not run)"
else
  expect "CUDA LibTorch without NCCL" "rc=$rc $cuda_torch_why" "rc=1 LibTorch 2.5.1+cu124 found, but not NCCL"
fi
touch "$lt/lib/libnccl.so.2" "$lt/lib/libcudart.so.12" "$lt/include/nccl.h" "$lt/include/cuda_runtime.h"
DDPDESK_LIBTORCH=$lt CUDA_HOME=$lt ddpdesk_find_cuda_torch
expect "a CUDA LibTorch archive with its libraries" \
  "rc=$? $cuda_torch_prefix|$cuda_nccl_lib|$cuda_nccl_inc|$cuda_cudart_lib|$cuda_torch_what" \
  "rc=0 $lt|$lt/lib/libnccl.so.2|$lt/include|$lt/lib/libcudart.so.12|LibTorch 2.5.1+cu124"

# build.sh: the worker alone with no CUDA LibTorch fails with the reason, before any cmake.
out=$(cd "$src" && DDPDESK_WORKER_ONLY=1 DDPDESK_BUILD_DIR=$tmp/build DDPDESK_PYTHON=/usr/bin/python3 \
  scripts/build.sh 2>&1)
expect "DDPDESK_WORKER_ONLY without CUDA fails" "rc=$? $out" \
  "rc=1 build: no CUDA worker: the PyTorch 1.13"
[ ! -e "$tmp/build/cuda-worker" ] || { echo "FAIL: a cuda-worker tree was configured"; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }
