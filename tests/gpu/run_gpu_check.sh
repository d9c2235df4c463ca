#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU and PyTorch 2.x but no Qt and no package access.
# Builds ddpdesk-worker against that PyTorch's LibTorch (NCCL on), then runs fmnist-cnn with
# --device cuda (world=1 through the NCCL communicator) beside the Python reference on the same
# GPU and prints both throughputs, in fp32, bf16 and fp16 (against torch.autocast and GradScaler)
# and with --cuda-graph (its losses step by step against the unrecorded run's);
# trains a user TorchScript task on CUDA; checks that a CUDA rank
# sends its GPU's system gauges (NVML and the caching allocator's), and that two ranks on one GPU
# fail with a clear error. Then what only a GPU can run for real: a CUDA out-of-memory in training
# (exit 3, the line with the allocator's peak, the checkpoint the rank writes), --fit-batch
# fitting a micro-batch against a real out-of-memory, and the traced-module check on models that
# this machine's PyTorch 2.x makes (tests/integration/py/make_layer_models.py, the expectations of
# test_user_task_layers.cpp).
#
# GPU time is scarce, so every step after the build runs even when an earlier one failed, each
# under a time limit; the summary at the end names each step's result and the exit status is
# non-zero when any failed.
#
# Needs, carried from a Debian machine (nothing can be installed there):
#   DDPDESK_EXTRA_INCLUDE  a directory with nlohmann/ and CLI/ headers (copies of /usr/include's)
#   DDPDESK_FMNIST_DIR     a directory with the four Fashion-MNIST .gz files
# (tests/gpu/device_files.sh gathers both into build/gpu-files.)
# Optional: GPU_CHECK_LOG_DIR, a folder for the build log and each step's output;
# GPU_CHECK_BUILT=1: no build, the build/app/ddpdesk-worker-cuda an earlier run left (a command
# time limit can then split the build from the steps).
# Usage: tests/gpu/run_gpu_check.sh      (from the repository root; a few minutes)
#
# GPU_CHECK_REHEARSE=1 rehearses the steps that need no GPU to exist on a CPU machine, so a slip
# in this script costs no GPU time: no build, the CPU worker build/app/ddpdesk-worker (configured
# with -DDDPDESK_FAULT_INJECTION=ON) with --device cpu, /usr/bin/python3, the steps that need a
# GPU skipped, and the test-only fault DDPDESK_FAULT_OOM_ABOVE standing in for the real
# out-of-memory; assertions on GPU-only figures (the allocator's peak) are left out.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
rehearse=${GPU_CHECK_REHEARSE:-0}
[ "$rehearse" = 1 ] || : "${DDPDESK_EXTRA_INCLUDE:?set it to a folder holding nlohmann/json.hpp and CLI/CLI.hpp}"
: "${DDPDESK_FMNIST_DIR:?set it to a folder holding the Fashion-MNIST .gz files}"
export DDPDESK_FMNIST_DIR
logs=${GPU_CHECK_LOG_DIR:-$(mktemp -d)}
export logs  # the steps run in shells of their own
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
# gpu_step NAME SECONDS CMD...: a step that needs a GPU, skipped in a rehearsal.
gpu_step() { [ "$rehearse" = 1 ] || step "$@"; }

if [ "$rehearse" = 1 ]; then
  w=build/app/ddpdesk-worker dev=cpu py=/usr/bin/python3
  [ -x "$w" ] || { echo "no $w: build the CPU worker first"; exit 1; }
else
  if [ "${GPU_CHECK_BUILT:-0}" = 1 ]; then
    [ -x build/app/ddpdesk-worker-cuda ] || { echo "GPU_CHECK_BUILT=1 but no build/app/ddpdesk-worker-cuda"; exit 1; }
  else
    tests/gpu/build_gpu_worker.sh "$logs" || exit 1
  fi
  w=build/app/ddpdesk-worker-cuda dev=cuda py=python3
fi
rank0() { env MASTER_ADDR=127.0.0.1 MASTER_PORT=$1 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 "${@:2}"; }
export -f rank0
export w dev py rehearse

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
gpu_step probe 60 probe
for b in 64 512; do
  gpu_step "worker-cnn-b$b" 180 rank0 29531 env DDPDESK_FORCE_COMM=1 \
    "$w" --task fmnist-cnn --device cuda --batch-size $b --epochs 2 --lr 1e-3
  gpu_step "python-cnn-b$b" 180 rank0 29532 python3 tests/gpu/fmnist_cuda_ref.py "$DDPDESK_FMNIST_DIR" 2 $b
done

# --cuda-graph: the same run with its micro-step and optimizer update recorded as CUDA graphs.
# Throughput beside the unrecorded worker's and PyTorch's (the aim: at least twice PyTorch eager
# at batch 64). Then two short runs, recorded and not, every step logged: the recording must be
# announced, and the losses must agree step by step (steps 1 and 2 run unrecorded in both, step
# 3 is recorded and replayed, step 4 follows the first replayed update) — to 1e-4, since a GPU's
# atomics may round differently from run to run.
gpu_step worker-cnn-b64-graph 180 rank0 29537 env DDPDESK_FORCE_COMM=1 \
  "$w" --task fmnist-cnn --device cuda --batch-size 64 --epochs 2 --lr 1e-3 --cuda-graph
# (A rehearsal takes the same path on the CPU without recording: DDPDESK_FAULT_GRAPHED_CPU.)
graph_steps() {
  local mode graphed
  for mode in graph eager; do
    graphed=()
    [ $mode = graph ] && [ "$rehearse" = 1 ] && graphed=(env DDPDESK_FAULT_GRAPHED_CPU=1)
    rank0 29538 env DDPDESK_FORCE_COMM=1 "${graphed[@]}" "$w" --task fmnist-cnn --device "$dev" \
      --batch-size 64 --accum-steps 2 --dataset-size 3200 --epochs 1 --lr 1e-3 --log-interval 1 \
      --metrics-file "$logs/steps-$mode.jsonl" \
      $([ $mode = graph ] && [ "$rehearse" != 1 ] && echo --cuda-graph) \
      >"$logs/steps-$mode.out" 2>&1 || { tail -n 5 "$logs/steps-$mode.out"; return 1; }
  done
  [ "$rehearse" = 1 ] ||
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
try:
    gs, es, ps = (figures(n) for n in ("worker-cnn-b64-graph", "worker-cnn-b64", "python-cnn-b64"))
except (OSError, IndexError):
    print("batch 64 throughput: not measured (a rehearsal, or those steps failed)")
else:
    print(f"batch 64: graphed {gs:.0f} samples/s, unrecorded {es:.0f}, PyTorch {ps:.0f}: "
          f"graphed/PyTorch {gs / ps:.2f}x, graphed/unrecorded {gs / es:.2f}x")
PY
}
export -f graph_steps
step cuda-graph-steps 120 graph_steps

# Mixed precision beside PyTorch's autocast (fp16 with GradScaler) on the same GPU: both finish,
# their final losses within 25 % of each other (one batch's loss: noisy), throughput side by side.
for p in bf16 fp16; do
  gpu_step "worker-cnn-$p" 180 rank0 29535 env DDPDESK_FORCE_COMM=1 \
    "$w" --task fmnist-cnn --device cuda --batch-size 512 --epochs 2 --lr 1e-3 --precision $p
  gpu_step "python-cnn-$p" 180 rank0 29536 python3 tests/gpu/fmnist_cuda_ref.py "$DDPDESK_FMNIST_DIR" 2 512 $p
done
close_losses() {
  local a b
  a=$(grep -o 'final_loss=[0-9.e+-]*' "$logs/worker-cnn-$1.log" | tail -n 1 | cut -d= -f2)
  b=$(grep -o 'final_loss=[0-9.e+-]*' "$logs/python-cnn-$1.log" | tail -n 1 | cut -d= -f2)
  echo "final loss $1: worker $a, PyTorch $b"
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); assert abs(a - b) <= 0.25 * b, (a, b)' "$a" "$b"
}
export -f close_losses
for p in bf16 fp16; do gpu_step "precision-$p-vs-pytorch" 20 close_losses $p; done

user=$(mktemp -d)
export user
gpu_step user-task-make 120 python3 examples/make_user_task.py --out "$user" --data fmnist --model mlp
gpu_step user-task-check 60 "$w" --check --task script --device cuda --model "$user/model.pt" \
  --train-data "$user/train.safetensors" --eval-data "$user/eval.safetensors"
gpu_step user-task-train 180 rank0 29533 env DDPDESK_FORCE_COMM=1 "$w" --task script --device cuda \
  --model "$user/model.pt" --train-data "$user/train.safetensors" \
  --eval-data "$user/eval.safetensors" --batch-size 64 --accum-steps 2 --epochs 1 \
  --run-dir "$user/run"
# The user's TorchScript model recorded too (an MLP without dropout draws no random numbers).
user_graph() {
  local out
  out=$(rank0 29540 env DDPDESK_FORCE_COMM=1 "$w" --task script --device cuda \
    --model "$user/model.pt" --train-data "$user/train.safetensors" --batch-size 64 \
    --accum-steps 2 --epochs 1 --cuda-graph 2>&1) || { echo "$out" | tail -n 5; return 1; }
  echo "$out" | grep -E "CUDA graphs|samples_per_s" | tail -n 3
  echo "$out" | grep -q "CUDA graphs: the micro-step of 64 samples and the optimizer update recorded" ||
    { echo "the user's model was not recorded"; return 1; }
}
export -f user_graph
gpu_step user-task-graph 120 user_graph
gpu_step user-model-loads-on-cpu 60 python3 -c "import torch,sys; m=torch.jit.load(sys.argv[1], map_location='cpu'); print('model.pt loads on CPU:', sum(p.numel() for p in m.parameters()), 'parameters, on', {str(p.device) for p in m.parameters()})" "$user/run/model.pt"

gauges() {
  rank0 29534 "$w" --task fmnist-cnn --device cuda --epochs 1 --dataset-size 4096 \
    --system-interval 0.2 --metrics-file "$user/system.jsonl" >/dev/null || return
  grep '"type":"gauge"' "$user/system.jsonl" | tail -n 8
  grep -q '"name":"gpu_memory_used_bytes"' "$user/system.jsonl" ||
    { echo "no GPU gauges: the NVML path failed on a GPU machine"; return 1; }
  # The rank's own process on its GPU (NVML's process list by pid): more than nothing.
  grep '"name":"gpu_process_memory_bytes"' "$user/system.jsonl" | tail -n 1 |
    python3 -c 'import json,sys; v=json.loads(sys.stdin.read())["value"]; print("process GPU memory", v); assert v > 0' ||
    { echo "no process GPU memory: NVML by pid failed on a GPU machine"; return 1; }
}
export -f gauges
gpu_step nvml-gauges 120 gauges

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
gpu_step two-ranks-one-gpu 90 two_ranks

# The caching allocator's gauges in the system samples of the nvml-gauges run (made again if that
# step left none): each sample holding all three has allocated <= reserved, and the peak is more
# than nothing.
allocator_gauges() {
  [ -s "$user/system.jsonl" ] || rank0 29534 "$w" --task fmnist-cnn --device cuda --epochs 1 \
    --dataset-size 4096 --system-interval 0.2 --metrics-file "$user/system.jsonl" >/dev/null ||
    return
  python3 - "$user/system.jsonl" <<'PY'
import collections, json, sys
names = ("gpu_allocated_bytes", "gpu_reserved_bytes", "gpu_peak_bytes")
samples = collections.defaultdict(dict)  # the gauges of one system sample share its time
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("type") == "gauge" and m["name"] in names:
        samples[m["time"]][m["name"]] = m["value"]
full = [s for s in samples.values() if len(s) == 3]
assert full, f"no system sample with all of {names}: the allocator's gauges are missing"
for s in full:
    assert s["gpu_allocated_bytes"] <= s["gpu_reserved_bytes"], s
last = full[-1]
print(f"{len(full)} samples; last: allocated {last['gpu_allocated_bytes'] / 2**20:.1f} MiB, "
      f"reserved {last['gpu_reserved_bytes'] / 2**20:.1f} MiB, peak {last['gpu_peak_bytes'] / 2**20:.1f} MiB")
assert max(s["gpu_peak_bytes"] for s in full) > 0, "the allocator's peak is 0"
PY
}
export -f allocator_gauges
gpu_step allocator-gauges 120 allocator_gauges

# A user task whose activations take 64 MiB a sample (tests/gpu/make_oom_task.py) and a micro-batch
# of it, a power of two, needing at least twice the GPU's memory in one tensor. A rehearsal takes
# 16 KiB a sample and a stand-in memory of 32 MiB: the same micro-batch as on an 80 GiB GPU.
oom=$(mktemp -d)
export oom
oom_task() {
  local width=262144 memory
  if [ "$rehearse" = 1 ]; then
    width=64 memory=$((32 << 20))
  else
    memory=$("$w" --probe | tail -n 1 |
      python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["device_memory_bytes"][0])') ||
      return
  fi
  local per_sample=$((256 * width)) batch=128
  while [ $((batch * per_sample)) -lt $((2 * memory)) ]; do batch=$((batch * 2)); done
  echo "$batch" >"$oom/batch"
  echo "GPU memory $((memory >> 20)) MiB; micro-batch $batch: $(((batch * per_sample) >> 20)) MiB in one tensor"
  "$py" tests/gpu/make_oom_task.py --out "$oom" --samples "$batch" --width "$width"
}
export -f oom_task
step oom-task-make 120 oom_task

# A real out-of-memory in training: a run at micro-batch 128 writes its last checkpoint; resumed
# at the huge micro-batch into a run directory of its own, it runs out of memory in its first
# forward: exit 3, one line with the allocator's peak, and the checkpoint of the last finished
# step written again by the failing rank (from the state the out-of-memory left). Every
# micro-batch of one run is the same size, so in a single run nothing would have finished.
oom_in_training() {
  local m
  m=$(cat "$oom/batch") || return
  local s=$((m / 128)) task=(--task script --device "$dev" --model "$oom/model.pt"
    --train-data "$oom/train.safetensors")
  rm -rf "$oom/fits" "$oom/oom"
  rank0 29537 "$w" "${task[@]}" --batch-size 128 --epochs 1 --run-dir "$oom/fits" | tail -n 1
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "the run at micro-batch 128 failed"; return 1; }
  local stand_in=() out rc
  [ "$rehearse" = 1 ] && stand_in=("DDPDESK_FAULT_OOM_ABOVE=$((m / 2))")
  out=$(rank0 29538 env "${stand_in[@]}" "$w" "${task[@]}" --batch-size "$m" --epochs 2 \
    --resume "$oom/fits" --run-dir "$oom/oom" 2>&1)
  rc=$?
  echo "$out" | tail -n 3
  [ "$rc" -eq 3 ] || { echo "exit $rc, not 3 (out of memory)"; return 1; }
  local peak='; GPU memory peak [0-9.]+ (GiB|MiB)'
  [ "$dev" = cpu ] && peak=''
  local line="out of memory on rank 0 in a micro-batch of $m samples \(step $((s + 1))$peak\); checkpoint of step $s written; try --fit-batch or a smaller --batch-size"
  echo "$out" | grep -q -E "$line" || { echo "no line matching: $line"; return 1; }
  local ckpt
  ckpt=$(printf '%s/oom/checkpoints/step-%08d.pt' "$oom" "$s")
  [ -s "$ckpt" ] || { echo "no checkpoint $ckpt"; return 1; }
  echo "exit 3, the line, and $ckpt"
}
export -f oom_in_training
step oom-in-training 120 oom_in_training

# --fit-batch against a real out-of-memory: asked the huge micro-batch with no accumulation, the
# rank fits a smaller one, says so and trains the epoch.
fit_batch() {
  local m
  m=$(cat "$oom/batch") || return
  local stand_in=() out rc
  [ "$rehearse" = 1 ] && stand_in=("DDPDESK_FAULT_OOM_ABOVE=$((m / 16))")
  out=$(rank0 29539 env "${stand_in[@]}" "$w" --task script --device "$dev" \
    --model "$oom/model.pt" --train-data "$oom/train.safetensors" --batch-size "$m" \
    --accum-steps 1 --fit-batch --epochs 1 2>&1)
  rc=$?
  echo "$out" | grep -v " step " | tail -n 3
  [ "$rc" -eq 0 ] || { echo "exit $rc, not 0"; return 1; }
  local fit
  fit=$(echo "$out" | grep -o -E "micro-batch [0-9]+ × [0-9]+ accumulation steps fits \(asked $m × 1\)") ||
    { echo "no line 'micro-batch m × k accumulation steps fits (asked $m × 1)'"; return 1; }
  local micro accum
  read -r micro accum < <(echo "$fit" | grep -o -E "[0-9]+" | head -n 2 | tr '\n' ' ')
  if [ "$micro" -ge "$m" ] || [ $((micro * accum)) -ne "$m" ]; then
    echo "fitted $micro × $accum: not a smaller micro-batch of $m samples"
    return 1
  fi
  echo "fitted $micro × $accum for $m × 1"
}
export -f fit_batch
step fit-batch 180 fit_batch

# The traced-module check under this machine's PyTorch: torch.nn's train/eval layers scripted
# and traced by it (make_layer_models.py), each through --check as test_user_task_layers.cpp
# expects on Debian's LibTorch (the file's expected.txt): scripted accepted; traced refused in one
# line, exit 2, unless the layer has no mode; an accepted one's random draws as the file found
# them by running it (what keeps --cuda-graph from recording it). Eight checks at a time.
check_model() {  # check_model FILE accepted|refused [random|deterministic]
  local d=$oom/layers out err rc
  out=$("$w" --check --task script --device "$dev" --model "$d/$1" \
    --train-data "$d/$([ "$1" = transformer.pt ] && echo transformer-train || echo tokens).safetensors" \
    2>"$d/$1.err")
  rc=$?
  err=$(cat "$d/$1.err")
  if [ "$2" = accepted ]; then
    local draws=false
    [ "$3" = random ] && draws=true
    [ "$rc" -eq 0 ] && [[ $out == *'"ok":true'* ]] &&
      [[ $out == *"\"draws_random_numbers\":$draws"* ]] && { echo "ok   $1 accepted $3"; return; }
    echo "FAIL $1: exit $rc, want accepted, $3: $err $out"
  else
    [ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
      [[ $err == "ddpdesk-worker: invalid --model '$d/$1': made by torch.jit.trace"* ]] &&
      { echo "ok   $1 refused"; return; }
    echo "FAIL $1: exit $rc, want refused in one line: $err"
  fi
  return 1
}
export -f check_model
layer_checks() {
  "$py" -c 'import torch; print("models made by PyTorch", torch.__version__)'
  rm -rf "$oom/layers"
  "$py" tests/integration/py/make_layer_models.py --out "$oom/layers" >"$oom/layers.log" 2>&1 ||
    { tail -n 20 "$oom/layers.log"; echo "make_layer_models.py failed"; return 1; }
  local want
  want=$(wc -l <"$oom/layers/expected.txt")
  [ "$want" -ge 30 ] || { echo "expected.txt names $want models"; return 1; }
  xargs -P 8 -L 1 bash -c 'check_model "$0" "$1" "$2"' <"$oom/layers/expected.txt" >"$oom/checks.txt"
  sort "$oom/checks.txt"
  local ok
  ok=$(grep -c '^ok ' "$oom/checks.txt")
  echo "$ok of $want models as expected"
  [ "$ok" -eq "$want" ]
}
export -f layer_checks
step traced-module-check 240 layer_checks

echo "== summary"
printf '%s\n' "${results[@]}" | tee "$logs/summary.txt"
grep -h -E "samples_per_s|samples/s" "$logs"/worker-cnn-*.log "$logs"/python-cnn-*.log 2>/dev/null | tail -n 12
! printf '%s\n' "${results[@]}" | grep -q -E "FAILED|TIMED OUT"
