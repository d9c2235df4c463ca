#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU and PyTorch 2.x but no Qt and no package access.
# Builds ddpdesk-worker against that PyTorch's LibTorch (NCCL on), then runs fmnist-cnn with
# --device cuda (world=1 through the NCCL communicator) beside the Python reference on the same
# GPU and prints both throughputs, in fp32, bf16 and fp16 (against torch.autocast and GradScaler)
# and with --cuda-graph (its losses step by step against the unrecorded run's);
# trains a user TorchScript task on CUDA; checks that a CUDA rank
# sends its GPU's system gauges (NVML), and that two ranks on one GPU fail with a clear error.
#
# GPU time is scarce, so every step after the build runs even when an earlier one failed, each
# under a time limit; the summary at the end names each step's result and the exit status is
# non-zero when any failed.
#
# Needs, carried from a Debian machine (nothing can be installed there):
#   DDPDESK_EXTRA_INCLUDE  a directory with nlohmann/ and CLI/ headers (copies of /usr/include's)
#   DDPDESK_FMNIST_DIR     a directory with the four Fashion-MNIST .gz files
# Optional: GPU_CHECK_LOG_DIR, a folder for the build log and each step's output.
# Usage: tests/gpu/run_gpu_check.sh      (from the repository root; a few minutes)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${DDPDESK_EXTRA_INCLUDE:?set it to a folder holding nlohmann/json.hpp and CLI/CLI.hpp}"
: "${DDPDESK_FMNIST_DIR:?set it to a folder holding the Fashion-MNIST .gz files}"
export DDPDESK_FMNIST_DIR
logs=${GPU_CHECK_LOG_DIR:-$(mktemp -d)}
mkdir -p "$logs"

results=()
# step NAME SECONDS CMD...: runs CMD (a program or an exported function) with a limit, its output shown and kept in $logs/NAME.log.
step() {
  local name=$1 limit=$2
  shift 2
  echo "== $name"
  local t0=$SECONDS
  timeout --kill-after=5 "$limit" bash -c '"$@"' step "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  local verdict=ok
  [ "$rc" -eq 0 ] || verdict="FAILED (exit $rc)"
  [ "$rc" -eq 124 ] && verdict="TIMED OUT after ${limit}s"
  results+=("$(printf '%-28s %-24s %4ss' "$name" "$verdict" $((SECONDS - t0)))")
}

tests/gpu/build_gpu_worker.sh "$logs" || exit 1
w=build/app/ddpdesk-worker-cuda
rank0() { env MASTER_ADDR=127.0.0.1 MASTER_PORT=$1 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "${@:2}"; }
export -f rank0
export w

probe() {  # the GPUs named with their memory, by LibTorch and by the driver (NVML)
  "$w" --probe | tee /dev/stderr | python3 -c '
import json, sys
p = json.loads(sys.stdin.read().strip().splitlines()[-1])
assert p["cuda_available"] and p["cuda_built"], p
assert p["devices"] and len(p["device_memory_bytes"]) == len(p["devices"]), p
assert all(m > 2**30 for m in p["device_memory_bytes"]), p
assert p["nvml_devices"] and not p.get("nvml_missing"), p
print("probe ok:", p["devices"], [round(m / 2**30, 1) for m in p["device_memory_bytes"]], "GiB")'
}
export -f probe
step probe 60 probe
for b in 64 512; do
  step "worker-cnn-b$b" 180 rank0 29531 env DDPDESK_FORCE_COMM=1 \
    "$w" --task fmnist-cnn --device cuda --batch-size $b --epochs 2 --lr 1e-3
  step "python-cnn-b$b" 180 rank0 29532 python3 tests/gpu/fmnist_cuda_ref.py "$DDPDESK_FMNIST_DIR" 2 $b
done

# --cuda-graph: the same run with its micro-step and optimizer update recorded as CUDA graphs.
# Throughput beside the unrecorded worker's and PyTorch's (the aim: at least twice PyTorch eager
# at batch 64). Then two short runs, recorded and not, every step logged: the recording must be
# announced, and the losses must agree step by step (step 1 runs unrecorded in both, step 2 is
# the first replayed micro-step, step 3 follows the first replayed update) — to 1e-4, since a
# GPU's atomics may round differently from run to run.
step worker-cnn-b64-graph 180 rank0 29537 env DDPDESK_FORCE_COMM=1 \
  "$w" --task fmnist-cnn --device cuda --batch-size 64 --epochs 2 --lr 1e-3 --cuda-graph
graph_steps() {
  local mode
  for mode in graph eager; do
    rank0 29538 env DDPDESK_FORCE_COMM=1 "$w" --task fmnist-cnn --device cuda --batch-size 64 \
      --accum-steps 2 --dataset-size 3200 --epochs 1 --lr 1e-3 --log-interval 1 \
      --metrics-file "$logs/steps-$mode.jsonl" $([ $mode = graph ] && echo --cuda-graph) \
      >"$logs/steps-$mode.out" 2>&1 || { tail -n 5 "$logs/steps-$mode.out"; return 1; }
  done
  grep -q "CUDA graphs: the micro-step of 64 samples and the optimizer update recorded" \
    "$logs/steps-graph.out" || { echo "no recording was announced"; return 1; }
  python3 - "$logs" <<'PY'
import json, re, sys
logs = sys.argv[1]
def losses(mode):
    return [m["global_loss"] for m in map(json.loads, open(f"{logs}/steps-{mode}.jsonl"))
            if m.get("type") == "step"]
g, e = losses("graph"), losses("eager")
assert len(g) == len(e) == 25, (len(g), len(e))
worst = max(abs(a - b) / abs(b) for a, b in zip(g, e))
print(f"25 steps, recorded against unrecorded: worst relative loss difference {worst:.2e}")
assert worst <= 1e-4, list(zip(g, e))
def figures(name):
    text = open(f"{logs}/{name}.log").read()
    return float(re.findall(r"samples_per_s=([0-9.e+-]+)", text)[-1])
gs, es, ps = (figures(n) for n in ("worker-cnn-b64-graph", "worker-cnn-b64", "python-cnn-b64"))
print(f"batch 64: graphed {gs:.0f} samples/s, unrecorded {es:.0f}, PyTorch {ps:.0f}: "
      f"graphed/PyTorch {gs / ps:.2f}x, graphed/unrecorded {gs / es:.2f}x")
PY
}
export -f graph_steps
step cuda-graph-steps 120 graph_steps

# Mixed precision beside PyTorch's autocast (fp16 with GradScaler) on the same GPU: both finish,
# their final losses within 25 % of each other (one batch's loss: noisy), throughput side by side.
for p in bf16 fp16; do
  step "worker-cnn-$p" 180 rank0 29535 env DDPDESK_FORCE_COMM=1 \
    "$w" --task fmnist-cnn --device cuda --batch-size 512 --epochs 2 --lr 1e-3 --precision $p
  step "python-cnn-$p" 180 rank0 29536 python3 tests/gpu/fmnist_cuda_ref.py "$DDPDESK_FMNIST_DIR" 2 512 $p
done
close_losses() {
  local a b
  a=$(grep -o 'final_loss=[0-9.e+-]*' "$logs/worker-cnn-$1.log" | tail -n 1 | cut -d= -f2)
  b=$(grep -o 'final_loss=[0-9.e+-]*' "$logs/python-cnn-$1.log" | tail -n 1 | cut -d= -f2)
  echo "final loss $1: worker $a, PyTorch $b"
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert abs(a - b) <= 0.25 * b, (a, b)' "$a" "$b"
}
export -f close_losses
export logs
for p in bf16 fp16; do step "precision-$p-vs-pytorch" 20 close_losses $p; done

user=$(mktemp -d)
export user
step user-task-make 120 python3 examples/make_user_task.py --out "$user" --data fmnist --model mlp
step user-task-check 60 "$w" --check --task script --device cuda --model "$user/model.pt" \
  --train-data "$user/train.safetensors" --eval-data "$user/eval.safetensors"
step user-task-train 180 rank0 29533 env DDPDESK_FORCE_COMM=1 "$w" --task script --device cuda \
  --model "$user/model.pt" --train-data "$user/train.safetensors" \
  --eval-data "$user/eval.safetensors" --batch-size 64 --accum-steps 2 --epochs 1 \
  --run-dir "$user/run"
step user-model-loads-on-cpu 60 python3 -c "import torch,sys; m=torch.jit.load(sys.argv[1], map_location='cpu'); print('model.pt loads on CPU:', sum(p.numel() for p in m.parameters()), 'parameters, on', {str(p.device) for p in m.parameters()})" "$user/run/model.pt"

gauges() {
  rank0 29534 "$w" --task fmnist-cnn --device cuda --epochs 1 --dataset-size 4096 \
    --metrics-file "$user/system.jsonl" >/dev/null || return
  grep '"type":"gauge"' "$user/system.jsonl" | tail -n 8
  grep -q '"name":"gpu_memory_used_bytes"' "$user/system.jsonl" ||
    { echo "no GPU gauges: the NVML path failed on a GPU machine"; return 1; }
  # The rank's own process on its GPU (NVML's process list by pid): more than nothing.
  grep '"name":"gpu_process_memory_bytes"' "$user/system.jsonl" | tail -n 1 |
    python3 -c 'import json,sys; v=json.loads(sys.stdin.read())["value"]; print("process GPU memory", v); assert v > 0' ||
    { echo "no process GPU memory: NVML by pid failed on a GPU machine"; return 1; }
}
export -f gauges
step nvml-gauges 120 gauges

# Two ranks on one GPU must fail, quickly and saying why.
two_ranks() {
  local out
  out=$(scripts/launch-local.sh 2 "$w" --task fmnist-cnn --device cuda --epochs 1 \
    --dataset-size 256 2>&1)
  local rc=$?
  echo "$out" | tail -n 5
  [ "$rc" -ne 0 ] || { echo "two ranks on one GPU exited 0"; return 1; }
  echo "$out" | grep -q -E "GPU" || { echo "no message naming the GPU"; return 1; }
}
export -f two_ranks
step two-ranks-one-gpu 90 two_ranks

echo "== summary"
printf '%s\n' "${results[@]}" | tee "$logs/summary.txt"
grep -h -E "samples_per_s|samples/s" "$logs"/worker-cnn-*.log "$logs"/python-cnn-*.log 2>/dev/null | tail -n 12
! printf '%s\n' "${results[@]}" | grep -q -E "FAILED|TIMED OUT"
