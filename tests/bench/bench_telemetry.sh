#!/usr/bin/env bash
# What the system sampler costs training: fmnist-mlp, world 2, batch 64, 1 epoch, with system
# metrics on (the default, one sample a second per rank) and off (--system-interval 0), in
# alternating runs so drift on a shared machine hits both alike. Both write their metrics file,
# so the gauges' encoding and writing are in the cost. Builds nothing: uses an existing build.
#   tests/bench/bench_telemetry.sh [rounds]   (env: DDPDESK_BUILD_DIR, default build)
# Prints each side's best and median samples/s, the ratio on/off and the spread of the off runs:
# an overhead inside that spread is noise, not a measurement. Target: under 1 % of throughput.
# The step breakdown cannot be switched off (every step message carries it), so its cost is
# measured by bench_step_clock (built here if missing) against the step time of the off runs.
# The sampler itself is also timed directly (bench_system_sample): a reading a second is far below
# the run-to-run noise of the throughput comparison.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
worker=${DDPDESK_WORKER:-$root/${DDPDESK_BUILD_DIR:-build}/app/ddpdesk-worker}
rounds=${1:-5}
[ -x "$worker" ] || { echo "bench: no worker at $worker (build first: scripts/build.sh)"; exit 1; }
build=$(dirname "$(dirname "$worker")")
cmake --build "$build" --target bench_step_clock bench_system_sample >/dev/null || { echo "bench: cannot build bench_step_clock or bench_system_sample"; exit 1; }
export OMP_NUM_THREADS=1
tmp=$(mktemp -d /tmp/ddpdesk-bench-telemetry-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | tail -n 1; }
run() {  # interval -> samples/s of one run
  scripts/launch-local.sh 2 "$worker" --task fmnist-mlp --epochs 1 --batch-size 64 --lr 1e-3 \
    --system-interval "$1" --metrics-file "$tmp/m{rank}.jsonl" 2>/dev/null | field samples_per_s
  rm -f "$tmp"/m*.jsonl
}

on=(); off=()
for ((i = 0; i < rounds; i++)); do
  # Which side goes first alternates too.
  if ((i % 2 == 0)); then off+=("$(run 0)"); on+=("$(run 1)"); else on+=("$(run 1)"); off+=("$(run 0)"); fi
done
printf '%s\n' "${off[@]}" >"$tmp/off"
printf '%s\n' "${on[@]}" >"$tmp/on"
stats() { sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f %.0f %.0f", v[NR], m, v[1] }'; }
read -r off_best off_median off_worst <<<"$(stats "$tmp/off")"
read -r on_best on_median on_worst <<<"$(stats "$tmp/on")"
echo "fmnist-mlp, world 2, batch 64, 1 epoch, $rounds runs each, OMP_NUM_THREADS=1; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| system metrics | best s/s | median s/s | worst s/s |"
echo "|----------------|---------:|-----------:|----------:|"
echo "| off (--system-interval 0) | $off_best | $off_median | $off_worst |"
echo "| on (1 s)       | $on_best | $on_median | $on_worst |"
awk -v ob="$on_best" -v fb="$off_best" -v om="$on_median" -v fm="$off_median" -v fw="$off_worst" \
  'BEGIN { if (fb <= 0 || fm <= 0) { print "bench: a run failed"; exit 1 }
           printf "on/off: best %.4f, median %.4f (overhead %.2f %% by the medians; target < 1 %%)\n", ob / fb, om / fm, (1 - om / fm) * 100
           printf "spread of the off runs: %.1f %% (best vs worst): a smaller overhead than that is noise\n", (fb - fw) / fb * 100 }'
# Per-rank step time of the median off run: world 2 x batch 64 samples per step.
step_ms=$(awk -v m="$off_median" 'BEGIN { printf "%.4f", 2 * 64 / m * 1000 }')
"$build/tests/engine/bench_step_clock" 1 "$step_ms"
"$build/tests/engine/bench_system_sample"
