#!/usr/bin/env bash
# bf16 on CPU: `ddpdesk-worker --precision bf16` against PyTorch DDP under
# torch.autocast("cpu", dtype=torch.bfloat16) (tests/bench/reference/fmnist_ddp.py --precision
# bf16), and each against its own fp32, side by side in one run: the same task and settings as
# bench_engine.sh's fmnist-mlp row (world 2, batch 64, 1 epoch, Adam 1e-3, OMP_NUM_THREADS=1).
# Builds nothing: uses an existing build.
#   tests/bench/bench_precision.sh [rounds]     (env: DDPDESK_BUILD_DIR, default build)
# Prints samples/s for both in each precision and their ratio, the best of `rounds` runs (default
# 2) each, since this 2-core machine is shared and noisy; and each side's bf16 / fp32 speed-up,
# the median over the rounds of fp32 and bf16 run back to back (a load that comes and goes moves
# both alike).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
worker=${DDPDESK_WORKER:-$root/${DDPDESK_BUILD_DIR:-build}/app/ddpdesk-worker}
anchors=$root/tests/bench/reference
rounds=${1:-2}
[ -x "$worker" ] || { echo "bench: no worker at $worker (build first: scripts/build.sh)"; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "bench: needs python3-torch"; exit 1; }
export OMP_NUM_THREADS=1 PATH=/usr/bin:$PATH
gemm=$("$worker" --probe 2>/dev/null | sed -n 's/.*"gemm":"\([^"]*\)".*/\1/p')
# bf16 runs on native instructions where the CPU has them, emulated in float32 where not.
isa=$(grep -o -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | paste -s -d ' ')

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -n 1; }

# One round: fp32 then bf16 on each side, back to back, so a round's bf16 / fp32 ratio compares
# runs under the same load. Lines "SIDE PRECISION samples/s test_acc".
round() {
  local p out
  for p in fp32 bf16; do
    out=$("$anchors/launch.sh" 2 python3 "$anchors/fmnist_ddp.py" --model mlp --epochs 1 \
      --batch 64 --accum 1 --precision $p 2>/dev/null | grep python-ddp)
    echo "Python $p $(echo "$out" | field samples_per_s) $(echo "$out" | field test_acc)"
    out=$(scripts/launch-local.sh 2 "$worker" --task fmnist-mlp --epochs 1 --batch-size 64 \
      --lr 1e-3 --precision $p 2>/dev/null)
    echo "ddpdesk $p $(echo "$out" | field samples_per_s) $(echo "$out" | field test_acc)"
  done
}
runs=$(for ((i = 0; i < rounds; i++)); do round | sed "s/^/$i /"; done)

echo "ddpdesk's matrix products: ${gemm:-unknown}; CPU bf16 instructions: ${isa:-none};" \
  "OMP_NUM_THREADS=1; best of $rounds rounds; load average at the end $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo "$runs" | awk '
  { s[$1, $2, $3] = $4; acc[$2, $3] = $5; if ($4 > best[$2, $3]) best[$2, $3] = $4; n = $1 + 1 }
  function median(a, k,   i, j, t) {  # of a[0..k-1], sorted in place
    for (i = 1; i < k; i++) for (j = i; j > 0 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return k % 2 ? a[(k - 1) / 2] : (a[k / 2 - 1] + a[k / 2]) / 2
  }
  END {
    print "| fmnist-mlp, world 2, batch 64, 1 epoch | Python s/s | ddpdesk s/s |  ratio | test acc (Python, ddpdesk) |"
    print "|----------------------------------------|-----------:|------------:|-------:|----------------------------|"
    split("fp32 bf16", ps, " ")
    for (k = 1; k <= 2; k++) {
      p = ps[k]
      printf "| %-38s | %10.0f | %11.0f | %5.2fx | %s, %s |\n", p, best["Python", p], best["ddpdesk", p],
        (best["Python", p] > 0 ? best["ddpdesk", p] / best["Python", p] : 0), acc["Python", p], acc["ddpdesk", p]
    }
    split("ddpdesk Python", sides, " ")
    for (k = 1; k <= 2; k++) {
      side = sides[k]; line = ""
      for (i = 0; i < n; i++) {
        r[i] = (s[i, side, "fp32"] > 0 ? s[i, side, "bf16"] / s[i, side, "fp32"] : 0)
        line = line sprintf(" %.2f", r[i])
      }
      printf "bf16 / fp32 throughput, %s: median %.2fx over the rounds (each round:%s)\n", side, median(r, n), line
    }
  }'
