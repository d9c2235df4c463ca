# Finds a CUDA-capable LibTorch for the CUDA worker (sourced by scripts/build.sh): an unpacked
# LibTorch archive named by DDPDESK_LIBTORCH, else the PyTorch of the python3 in use (an
# activated venv or conda env included; DDPDESK_PYTHON names another interpreter). On success
# ddpdesk_find_cuda_torch sets
#   cuda_torch_prefix   the folder CMake finds Torch in (CMAKE_PREFIX_PATH)
#   cuda_torch_what     "LibTorch <version> (CUDA <version>)" for messages
#   cuda_nccl_lib, cuda_nccl_inc, cuda_cudart_lib, cuda_cudart_inc
#                       NCCL and the CUDA runtime: PyTorch's own nvidia-* wheels, else the CUDA
#                       toolkit (CUDA_HOME, default /usr/local/cuda), else the system's
# and returns 0; otherwise it sets cuda_torch_why (one line: why there is no CUDA worker) and
# returns 1. It never fails the caller and prints nothing.

ddpdesk_find_cuda_torch() {
  cuda_torch_prefix='' cuda_torch_what='' cuda_torch_why=''
  cuda_nccl_lib='' cuda_nccl_inc='' cuda_cudart_lib='' cuda_cudart_inc=''
  local cuda_home=${CUDA_HOME:-/usr/local/cuda} site='' libdir=''
  if [ -n "${DDPDESK_LIBTORCH:-}" ]; then
    if [ ! -f "$DDPDESK_LIBTORCH/share/cmake/Torch/TorchConfig.cmake" ]; then
      cuda_torch_why="DDPDESK_LIBTORCH=$DDPDESK_LIBTORCH holds no LibTorch (no share/cmake/Torch/TorchConfig.cmake)"
      return 1
    fi
    if ! ls "$DDPDESK_LIBTORCH"/lib/libtorch_cuda.so* >/dev/null 2>&1; then
      cuda_torch_why="the LibTorch in DDPDESK_LIBTORCH=$DDPDESK_LIBTORCH has no CUDA (no lib/libtorch_cuda.so)"
      return 1
    fi
    cuda_torch_prefix=$DDPDESK_LIBTORCH
    libdir=$DDPDESK_LIBTORCH/lib
    cuda_torch_what="LibTorch $(cat "$DDPDESK_LIBTORCH/build-version" 2>/dev/null || echo '(unknown version)')"
  else
    local python=${DDPDESK_PYTHON:-python3} out
    if ! command -v "$python" >/dev/null 2>&1; then
      cuda_torch_why="no $python on PATH to find a CUDA PyTorch with (or set DDPDESK_LIBTORCH)"
      return 1
    fi
    # One line: version, CUDA version ('' for a CPU build), cmake prefix, site-packages.
    if ! out=$("$python" -c 'import os, torch, torch.utils
print(torch.__version__, torch.version.cuda or "-", torch.utils.cmake_prefix_path,
      os.path.dirname(os.path.dirname(torch.__file__)), sep="\t")' 2>/dev/null); then
      cuda_torch_why="$(command -v "$python") has no PyTorch (activate the venv that has it, or set DDPDESK_LIBTORCH)"
      return 1
    fi
    local version cuda prefix
    IFS=$'\t' read -r version cuda prefix site <<<"$out"
    if [ "$cuda" = "-" ]; then
      cuda_torch_why="the PyTorch $version of $(command -v "$python") has no CUDA"
      return 1
    fi
    cuda_torch_prefix=$prefix
    libdir=$site/torch/lib
    cuda_torch_what="LibTorch $version (CUDA $cuda) of $(command -v "$python")"
  fi
  # NCCL and the CUDA runtime: where PyTorch loads them from first (its nvidia-* wheels beside
  # it, or an archive's lib/), then the toolkit and the system.
  local roots=()
  [ -n "$site" ] && [ -d "$site/nvidia" ] && roots+=("$site/nvidia")
  roots+=("$libdir" "$cuda_home" /usr/lib/x86_64-linux-gnu /usr/include)
  _ddpdesk_first() { find "${roots[@]}" -name "$1" 2>/dev/null | sort | head -n 1; }
  cuda_nccl_lib=${NCCL_LIBRARY:-$(_ddpdesk_first 'libnccl.so*')}
  cuda_nccl_inc=${NCCL_INCLUDE_DIR:-$(dirname "$(_ddpdesk_first nccl.h)")}
  cuda_cudart_lib=${CUDART_LIBRARY:-$(_ddpdesk_first 'libcudart.so*')}
  cuda_cudart_inc=${CUDART_INCLUDE_DIR:-$(dirname "$(_ddpdesk_first cuda_runtime.h)")}
  unset -f _ddpdesk_first
  if [ -z "$cuda_nccl_lib" ] || [ -z "$cuda_cudart_lib" ] || [ "$cuda_nccl_inc" = . ] ||
    [ "$cuda_cudart_inc" = . ]; then
    cuda_torch_why="$cuda_torch_what found, but not NCCL and the CUDA runtime with their headers (the nvidia-nccl and nvidia-cuda-runtime wheels, or the CUDA toolkit in $cuda_home)"
    return 1
  fi
  return 0
}
