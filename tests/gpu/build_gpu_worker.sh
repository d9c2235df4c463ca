#!/usr/bin/env bash
# Builds build-gpu/app/ddpdesk-worker on a GPU machine against its PyTorch's LibTorch, with the
# NCCL that PyTorch loads (no Qt, no tests). Used by run_gpu_check.sh and run_gpu_sanitizer.sh.
#   tests/gpu/build_gpu_worker.sh LOG_DIR      (from the repository root; needs
#   DDPDESK_EXTRA_INCLUDE, see run_gpu_check.sh). Prints the machine's GPU, PyTorch and compiler.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${DDPDESK_EXTRA_INCLUDE:?set it to a folder holding nlohmann/json.hpp and CLI/CLI.hpp}"
logs=$1
mkdir -p "$logs"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
cuda_home=${CUDA_HOME:-/usr/local/cuda}
# The NCCL that PyTorch itself loads (the nvidia-nccl wheel), else the CUDA toolkit's.
nccl_lib=${NCCL_LIBRARY:-$(find "$site/nvidia" "$cuda_home/lib64" "$cuda_home/lib" \
  -name 'libnccl.so*' 2>/dev/null | sort | head -n 1)}
nccl_inc=${NCCL_INCLUDE_DIR:-$(dirname "$(find "$site/nvidia" "$cuda_home/include" -name nccl.h \
  2>/dev/null | head -n 1)")}
cudart_lib=$(ls "$cuda_home"/lib64/libcudart.so* 2>/dev/null | head -n 1)
echo "nccl: $nccl_lib ($nccl_inc)  cudart: $cudart_lib  cores: $(nproc)  $(g++ --version | head -n 1)"

# Ninja keeps going after a failed compile (-k 0), so one build reports every error.
gen=(); keep_going=(); command -v ninja >/dev/null && gen=(-G Ninja) && keep_going=(-- -k 0)
build() {
  cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDDPDESK_MONITOR=OFF \
    -DDDPDESK_GUI=OFF -DDDPDESK_TESTS=OFF -DDDPDESK_NCCL=ON -DCMAKE_PREFIX_PATH="$prefix" \
    -DDDPDESK_EXTRA_INCLUDE="$DDPDESK_EXTRA_INCLUDE" -DNCCL_INCLUDE_DIR="$nccl_inc" \
    -DNCCL_LIBRARY="$nccl_lib" -DCUDART_INCLUDE_DIR="$cuda_home/include" \
    -DCUDART_LIBRARY="$cudart_lib" &&
    cmake --build build-gpu --parallel "$(nproc)" --target ddpdesk-worker "${keep_going[@]}"
}
echo "== build (log: $logs/build.log)"
t0=$SECONDS
if ! build >"$logs/build.log" 2>&1; then
  grep -E -m 20 "error|Error|FAILED" "$logs/build.log"
  tail -n 30 "$logs/build.log"
  echo "build FAILED after $((SECONDS - t0))s"
  exit 1
fi
echo "build ok in $((SECONDS - t0))s"
