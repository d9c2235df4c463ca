#!/usr/bin/env bash
# Builds the CUDA worker on a GPU machine through the user's path: scripts/build.sh with
# DDPDESK_WORKER_ONLY=1 (no Qt there), which finds the PyTorch that python3 imports, its NCCL and
# CUDA runtime, and places build/app/ddpdesk-worker-cuda. Used by run_gpu_check.sh and
# run_gpu_sanitizer.sh.
#   tests/gpu/build_gpu_worker.sh LOG_DIR      (from the repository root; header-only libraries
#   from DDPDESK_EXTRA_INCLUDE where Debian's packages are missing, see run_gpu_check.sh). Prints
#   the machine's GPU, PyTorch and compiler.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
logs=$1
mkdir -p "$logs"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
echo "cores: $(nproc)  $(c++ --version | head -n 1)"

echo "== build (log: $logs/build.log)"
t0=$SECONDS
if ! DDPDESK_WORKER_ONLY=1 DDPDESK_BUILD_DIR=build scripts/build.sh >"$logs/build.log" 2>&1; then
  grep -E -m 20 "error|Error|FAILED|no CUDA" "$logs/build.log" build/cuda-worker.log 2>/dev/null
  tail -n 30 build/cuda-worker.log 2>/dev/null || tail -n 30 "$logs/build.log"
  echo "build FAILED after $((SECONDS - t0))s"
  exit 1
fi
grep "^build:" "$logs/build.log"
echo "build ok in $((SECONDS - t0))s"
