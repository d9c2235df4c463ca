#!/usr/bin/env bash
# Compiles (syntax and types only, nothing linked or run) every engine file that has code for a
# CUDA build, with that code switched on, against this machine's LibTorch headers and the CUDA
# and NCCL headers — so code written where no GPU is can be checked before GPU time is spent on
# building it. Debian's libtorch-dev ships LibTorch's CUDA headers (c10/cuda, ATen/cuda); the CUDA
# runtime's come from Debian's non-free nvidia-cuda-dev and nccl.h from NCCL's sources:
#
#   apt-get download nvidia-cuda-dev     # with non-free in the sources; nothing is installed
#   dpkg-deb --fsys-tarfile nvidia-cuda-dev_*.deb | tar -x --wildcards './usr/include/*'
#   # nccl.h: NCCL's src/nccl.h.in with its ${nccl:...} version fields filled in
#
#   CUDA_INCLUDE=$PWD/usr/include NCCL_INCLUDE=/path/to/folder/with/nccl.h tests/gpu/cuda_syntax_check.sh
#
# A development check (CI has no non-free headers); it proves the code compiles against this
# LibTorch's version of the CUDA APIs, not a newer one's.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CUDA_INCLUDE:?set it to a folder holding cuda_runtime.h}"
: "${NCCL_INCLUDE:?set it to a folder holding nccl.h}"
[ -f "$CUDA_INCLUDE/cuda_runtime.h" ] || { echo "no cuda_runtime.h in $CUDA_INCLUDE" >&2; exit 2; }
[ -f "$NCCL_INCLUDE/nccl.h" ] || { echo "no nccl.h in $NCCL_INCLUDE" >&2; exit 2; }
cxx=${CXX:-clang++}

# LibTorch's CMake generates c10/cuda/impl/cuda_cmake_macros.h; a CPU LibTorch ships none.
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
mkdir -p "$gen/c10/cuda/impl"
printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' >"$gen/c10/cuda/impl/cuda_cmake_macros.h"

includes=()
for d in engine engine/*/; do includes+=(-I "${d%/}"); done
flags=(-std=gnu++17 -fsyntax-only -Wall -Wextra -Werror
  -DDDPDESK_HAVE_CUDA -DDDPDESK_HAVE_NCCL -DDDPDESK_HAVE_GLOO -DDDPDESK_FAULT_INJECTION
  -DUSE_C10D_GLOO -DUSE_DISTRIBUTED "${includes[@]}"
  -isystem /usr/include/torch/csrc/api/include -isystem "$CUDA_INCLUDE" -isystem "$NCCL_INCLUDE"
  -isystem "$gen")

# Every engine source that mentions a CUDA switch, and the NCCL communicator (CUDA-only whole).
mapfile -t files < <({
  grep -rl --include='*.cpp' -E 'DDPDESK_HAVE_(CUDA|NCCL)' engine
  echo engine/comm/nccl_communicator.cpp
  echo engine/comm/nccl_comm.cpp
} | sort -u)
failed=0
for f in "${files[@]}"; do
  if "$cxx" "${flags[@]}" "$f"; then
    echo "ok      $f"
  else
    echo "FAILED  $f"
    failed=1
  fi
done
exit $failed
