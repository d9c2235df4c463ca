#!/usr/bin/env bash
# How fast a run recovers (docs/recovery.md): fmnist-mlp on 2 CPU ranks under `ddpdesk --headless
# --max-restarts 1`, rank 1 killed with SIGKILL once a checkpoint exists; the time from the kill to
# the first optimizer step of the restarted ranks (read from the run's metrics.jsonl, polled every
# 20 ms). Peer, in the same run: the same spec started fresh, from the launch to its first step (a
# restart that started from scratch, as torchrun's does, pays at least that and loses the steps).
# Builds nothing: uses an existing build.
#   tests/bench/bench_restart.sh [rounds]   (env: DDPDESK_BUILD_DIR, default build)
# Target: at most 10 s from the death to training again.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=$root/${DDPDESK_BUILD_DIR:-build}/app/ddpdesk
rounds=${1:-3}
[ -x "$bin" ] || { echo "bench: no ddpdesk at $bin (build first: scripts/build.sh)"; exit 1; }
export OMP_NUM_THREADS=1 QT_QPA_PLATFORM=offscreen
tmp=$(mktemp -d /tmp/ddpdesk-bench-restart-XXXXXX)
trap 'pkill -9 -f "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
spec=(--task fmnist-mlp --nproc 2 --epochs 1 --batch-size 64 --checkpoint-every 20
  --max-restarts 1 --restart-backoff 0)

# A headless run in its own data home; prints its run directory once it exists.
start() {  # home
  XDG_DATA_HOME=$1 "$bin" --headless "${spec[@]}" --name "$(basename "$1")" >"$1.out" 2>"$1.err" &
  for _ in $(seq 600); do
    d=$(ls -d "$1"/ddpdesk/runs/* 2>/dev/null | head -n 1)
    [ -n "$d" ] && { echo "$d"; return; }
    sleep 0.05
  done
}
steps() {
  local n
  n=$(grep -c '"type":"step"' "$1/metrics.jsonl" 2>/dev/null)
  echo "${n:-0}"
}

fresh=(); restart=()
for ((i = 0; i < rounds; i++)); do
  home=$tmp/fresh-$i
  t0=$(now)
  dir=$(start "$home")
  until [ "$(steps "$dir")" -gt 0 ]; do sleep 0.02; done
  fresh+=("$(since "$t0")")
  pkill -9 -f "$home" 2>/dev/null; wait 2>/dev/null

  home=$tmp/restart-$i
  dir=$(start "$home")
  until ls "$dir"/checkpoints/step-*.pt >/dev/null 2>&1 && [ "$(steps "$dir")" -gt 60 ]; do sleep 0.05; done
  pid=$(sed -n 's/.*started 2 rank(s) of .*, pids [0-9]* \([0-9]*\).*/\1/p' "$home.err")
  t0=$(now)
  kill -9 "$pid"
  until grep -q '"event":"restart"' "$dir/metrics.jsonl" &&
    sed -n '/"event":"restart"/,$p' "$dir/metrics.jsonl" | grep -q '"type":"step"'; do sleep 0.02; done
  restart+=("$(since "$t0")")
  pkill -9 -f "$home" 2>/dev/null; wait 2>/dev/null
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
r=$(median "${restart[@]}"); f=$(median "${fresh[@]}")
printf 'restart: kill -9 of rank 1 to the first step after: median %.2f s (runs: %s)\n' "$r" "${restart[*]}"
printf 'peer: a fresh start to its first step: median %.2f s (runs: %s)\n' "$f" "${fresh[*]}"
awk -v r="$r" -v f="$f" 'BEGIN { printf "ratio restart/fresh start: %.2f; target <= 10 s: %s\n", r / f, r <= 10 ? "met" : "NOT met" }'
