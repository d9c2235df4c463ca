#!/usr/bin/env bash
# The CUDA path under NVIDIA's compute-sanitizer, on a GPU machine (as run_gpu_check.sh: PyTorch
# there, nothing installed): memcheck (out-of-bounds and misaligned device accesses, CUDA API
# errors) and synccheck over short CUDA runs of the worker — fmnist-cnn with accumulation through
# the NCCL communicator (its prepared allreduce on a stream of its own, events ordering it), and
# the user task (TorchScript on CUDA). Exit status non-zero when any tool reports an error.
#   tests/gpu/run_gpu_sanitizer.sh     (from the repository root; needs DDPDESK_EXTRA_INCLUDE and
#   DDPDESK_FMNIST_DIR as run_gpu_check.sh does; a few minutes)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${DDPDESK_FMNIST_DIR:?set it to a folder holding the Fashion-MNIST .gz files}"
export DDPDESK_FMNIST_DIR
logs=${GPU_CHECK_LOG_DIR:-$(mktemp -d)}
tests/gpu/build_gpu_worker.sh "$logs" || exit 1
w=$PWD/build/app/ddpdesk-worker-cuda
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$sanitizer" ] || { echo "compute-sanitizer not found"; exit 1; }

user=$(mktemp -d)
python3 examples/make_user_task.py --out "$user" --data fmnist --model mlp --limit 4096 \
  --eval-limit 1024 >/dev/null || { echo "make_user_task.py failed"; exit 1; }

fails=0
# CUDA API calls that return an error are not counted: a library under LibTorch probes for kernel
# images with cudaFuncGetAttributes and handles cudaErrorNoKernelImageForDevice (8 such calls a
# run on an H200, none from ddpdesk's code, which checks every CUDA call it makes itself).
api=(--report-api-errors no)
run() {  # NAME TOOL WORKER-ARGS...: one rank under the tool
  local name=$1 tool=$2
  shift 2
  echo "== $name ($tool)"
  local t0=$SECONDS
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29600 + RANDOM % 300)) RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
    DDPDESK_FORCE_COMM=1 timeout 300 "$sanitizer" --tool "$tool" --error-exitcode 99 \
    --print-limit 20 "${api[@]}" "$w" "$@" >"$logs/$name-$tool.log" 2>&1
  local rc=$?
  grep -E "ERROR SUMMARY|========= (Invalid|Program hit|Race|Barrier)" "$logs/$name-$tool.log" |
    head -n 12
  tail -n 2 "$logs/$name-$tool.log"
  echo "$name $tool: exit $rc in $((SECONDS - t0))s"
  [ "$rc" -eq 0 ] || fails=$((fails + 1))
}
cnn=(--task fmnist-cnn --device cuda --batch-size 64 --accum-steps 2 --epochs 1
  --dataset-size 2048)
script=(--task script --device cuda --model "$user/model.pt" --train-data "$user/train.safetensors"
  --eval-data "$user/eval.safetensors" --batch-size 64 --accum-steps 2 --epochs 1
  --run-dir "$user/run")
run cnn memcheck "${cnn[@]}"
run script memcheck "${script[@]}"
run cnn synccheck "${cnn[@]}"
echo "== $fails of 3 sanitizer runs failed"
[ "$fails" -eq 0 ]
