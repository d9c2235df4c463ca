#!/usr/bin/env bash
# Engine throughput against the Python references in tests/bench/reference, side by side in one run,
# same settings, same BLAS, OMP_NUM_THREADS=1 for both. Builds nothing: uses an existing build.
#   tests/bench/bench_engine.sh [rounds]     (env: DDPDESK_BUILD_DIR, default build)
# Prints samples/s for both and the ratio; the best of `rounds` runs (default 2) each, since this
# 2-core machine is shared and noisy.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
worker=${DDPDESK_WORKER:-$root/${DDPDESK_BUILD_DIR:-build}/app/ddpdesk-worker}
anchors=$root/tests/bench/reference
rounds=${1:-2}
[ -x "$worker" ] || { echo "bench: no worker at $worker (build first: scripts/build.sh)"; exit 1; }
[ -d "$anchors" ] || { echo "bench: no Python anchors at $anchors"; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "bench: needs python3-torch"; exit 1; }
export OMP_NUM_THREADS=1 PATH=/usr/bin:$PATH
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)
# Where ddpdesk's matrix products run (oneDNN or the BLAS; engine/gemm); Python's use the BLAS.
gemm=$("$worker" --probe 2>/dev/null | sed -n 's/.*"gemm":"\([^"]*\)".*/\1/p')

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -n 1; }
best() { sort -g | tail -n 1; }

# The seed script crashes when a batch has only empty samples (its own bug): retry a few times.
py_seed() {
  for _ in 1 2 3 4 5; do
    out=$("$anchors/launch.sh" 2 python3 "$anchors/seed_ddp.py" "$1" 2>/dev/null | grep seed-python)
    [ -n "$out" ] && { echo "$out"; return; }
  done
}

# The user task: the same 784-512-256-10 MLP, scripted by the example, on the same images.
user=$(mktemp -d /tmp/ddpdesk-bench-user-XXXXXX)
trap 'rm -rf "$user"' EXIT
/usr/bin/python3 examples/make_user_task.py --out "$user" --data fmnist --model mlp >/dev/null ||
  { echo "bench: examples/make_user_task.py failed"; exit 1; }

seed_py=(); seed_cc=(); mlp_py=(); mlp_cc=(); acc_py=(); acc_cc=(); user_cc=(); user_acc=()
for ((i = 0; i < rounds; i++)); do
  seed_py+=("$(py_seed 10 | field samples_per_s)")
  seed_cc+=("$(scripts/launch-local.sh 2 "$worker" --task seed --epochs 10 --batch-size 4 \
      --lr 1e-4 --weight-decay 5e-4 2>/dev/null | field samples_per_s)")
  out=$("$anchors/launch.sh" 2 python3 "$anchors/fmnist_ddp.py" --model mlp --epochs 1 \
      --batch 64 --accum 1 2>/dev/null | grep python-ddp)
  mlp_py+=("$(echo "$out" | field samples_per_s)"); acc_py+=("$(echo "$out" | field test_acc)")
  out=$(scripts/launch-local.sh 2 "$worker" --task fmnist-mlp --epochs 1 --batch-size 64 \
      --lr 1e-3 2>/dev/null)
  mlp_cc+=("$(echo "$out" | field samples_per_s)"); acc_cc+=("$(echo "$out" | field test_acc)")
  out=$(scripts/launch-local.sh 2 "$worker" --task script --model "$user/model.pt" \
      --train-data "$user/train.safetensors" --eval-data "$user/eval.safetensors" --epochs 1 \
      --batch-size 64 --lr 1e-3 2>/dev/null)
  user_cc+=("$(echo "$out" | field samples_per_s)"); user_acc+=("$(echo "$out" | field test_acc)")
done

row() {  # name python ddpdesk target
  awk -v n="$1" -v p="$2" -v c="$3" -v t="$4" \
    'BEGIN { printf "| %-34s | %10.0f | %10.0f | %6.2fx | %s |\n", n, p, c, (p > 0 ? c / p : 0), t }'
}
echo "BLAS: $blas; ddpdesk's matrix products: ${gemm:-unknown}; OMP_NUM_THREADS=1; best of $rounds rounds"
echo "| case (world=2, CPU)                | Python s/s | ddpdesk s/s |  ratio | target |"
echo "|------------------------------------|-----------:|-----------:|-------:|--------|"
row "seed task, batch 4, 10 epochs" "$(printf '%s\n' "${seed_py[@]}" | best)" \
  "$(printf '%s\n' "${seed_cc[@]}" | best)" ">= 17x"
row "fmnist-mlp, batch 64, 1 epoch" "$(printf '%s\n' "${mlp_py[@]}" | best)" \
  "$(printf '%s\n' "${mlp_cc[@]}" | best)" ">= 4x"
row "script task (TorchScript MLP), batch 64" "$(printf '%s\n' "${mlp_py[@]}" | best)" \
  "$(printf '%s\n' "${user_cc[@]}" | best)" ">= 2x"
awk -v u="$(printf '%s\n' "${user_cc[@]}" | best)" -v b="$(printf '%s\n' "${mlp_cc[@]}" | best)" \
  'BEGIN { printf "script task / built-in fmnist-mlp throughput: %.2f (target: >= 0.83, i.e. within 1.2x)\n", (b > 0 ? u / b : 0) }'
echo "script task test accuracy after 1 epoch: $(printf '%s\n' "${user_acc[@]}" | best)"
echo "fmnist-mlp test accuracy after 1 epoch: Python $(printf '%s\n' "${acc_py[@]}" | best)," \
  "ddpdesk $(printf '%s\n' "${acc_cc[@]}" | best) (one seed; over many: tests/bench/bench_accuracy.sh)"
