#!/usr/bin/env bash
# script_stop_soak.sh N [BUILD_DIR]: N headless Python-script runs (examples/ddp_train.py on 2
# ranks with the client, Debian's python3-torch, Gloo), each stopped at a random moment —
# python3 and torch loading, the rendezvous, training — in one of four ways, taken in turn:
#   sigint-ddpdesk      Ctrl+C to ddpdesk (SIGTERM to every rank, as torchrun's agent sends it)
#   sigterm-one-rank    SIGTERM to one rank (its client votes the stop to the other)
#   sigterm-every-rank  SIGTERM to every rank (as scancel sends it)
#   sigkill-ddpdesk     the monitor killed: the ranks get SIGTERM from the kernel (PDEATHSIG)
# A run passes when ddpdesk exits 130 and its status says Stopped (the monitor's death has
# neither to check), no rank outlives it, no rank's log holds a glibc heap message or a
# sanitizer report, and a stop that came after both ranks stepped left the script's
# checkpoint.pt, which torch loads. (A rank that the signal reaches before `import ddpdesk` dies
# of it, Python's default; ddpdesk calls that a stop too.) Each failure is printed with the
# ranks' output; the run directories of failures are kept. Exit 0 when all N passed.
# DDPDESK_SOAK_SEED fixes the random moments; DDPDESK_SOAK_MAX_DELAY (s, default 3) bounds them;
# DDPDESK_PYTHON3 (default /usr/bin/python3) runs the ranks.
set -uo pipefail
n=${1:?usage: script_stop_soak.sh N [BUILD_DIR]}
build=$(realpath "${2:-build}")
ddpdesk=$build/app/ddpdesk
[ -x "$ddpdesk" ] || { echo "script_stop_soak: no ddpdesk build in $build" >&2; exit 2; }
python=${DDPDESK_PYTHON3:-/usr/bin/python3}
"$python" -c 'import torch' 2>/dev/null ||
  { echo "script_stop_soak: $python has no torch (Debian: python3-torch)" >&2; exit 2; }
example=$(realpath "$(dirname "$0")/../../examples/ddp_train.py")
seed=${DDPDESK_SOAK_SEED:-$$}
RANDOM=$seed
max_delay_ms=$(awk -v s="${DDPDESK_SOAK_MAX_DELAY:-3}" 'BEGIN { printf "%d", s * 1000 }')
work=$(mktemp -d "${TMPDIR:-/tmp}/ddpdesk-script-soak.XXXXXX")
ways=(sigint-ddpdesk sigterm-one-rank sigterm-every-rank sigkill-ddpdesk)
heap_or_sanitizer='corrupted|free\(\)|double free|malloc\(\)|munmap_chunk|realloc\(\)|AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error:|Segmentation fault'
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
failures=0 at_start=0 in_training=0
. "$(dirname "$0")/soak_lib.sh"

# Whether both ranks have logged a step through the client.
both_stepping() {
  grep -q '"type":"step"' "$1/metrics/rank-0.jsonl" 2>/dev/null &&
    grep -q '"type":"step"' "$1/metrics/rank-1.jsonl" 2>/dev/null
}

for ((k = 1; k <= n; k++)); do
  way=${ways[(k - 1) % 4]}
  dir=$work/run-$k
  "$ddpdesk" --headless --task python --script "$example" --python "$python" --nproc 2 \
    --epochs 1000 --run-dir "$dir" \
    --script-args '--epochs {epochs} --samples 512 --step-sleep 0.02' >"$dir.out" 2>"$dir.err" &
  monitor=$!
  [ "$way" = sigkill-ddpdesk ] && disown "$monitor"
  pids=$(rank_pids "$dir.err")
  # A quarter of the stops come in the first 3 s of the ranks' lives (python3 and torch loading,
  # the rendezvous); the rest at a random moment of training.
  stepping=0
  if ((RANDOM % 4 == 0)); then
    delay=$((RANDOM % 3000))
    when="$delay ms after the ranks started"
  else
    for ((i = 0; i < 2400; i++)); do
      both_stepping "$dir" && break
      alive "$monitor" || break
      sleep 0.05
    done
    delay=$(((RANDOM * 32768 + RANDOM) % max_delay_ms))
    when="$delay ms into training"
  fi
  sleep "$(awk -v ms="$delay" 'BEGIN { printf "%.3f", ms / 1000 }')"
  both_stepping "$dir" && stepping=1
  case $way in
    sigint-ddpdesk) kill -INT "$monitor" 2>/dev/null ;;
    sigterm-one-rank) set -- $pids && [ $# -ge 2 ] && kill -TERM "${!#}" 2>/dev/null ;;
    sigterm-every-rank) [ -n "$pids" ] && kill -TERM $pids 2>/dev/null ;;
    sigkill-ddpdesk) kill -KILL "$monitor" 2>/dev/null ;;
  esac
  for ((i = 0; i < 2400; i++)); do alive "$monitor" || break; sleep 0.05; done
  if alive "$monitor"; then
    kill -KILL "$monitor" $pids 2>/dev/null
    fail "$k" "$way" "$when" "$dir" "ddpdesk still running 120 s after the stop"
    continue
  fi
  rc=""
  [ "$way" != sigkill-ddpdesk ] && { wait "$monitor"; rc=$?; }
  if ! wait_gone "$pids" $([ "$way" = sigkill-ddpdesk ] && echo 120 || echo 10); then
    kill -KILL $pids 2>/dev/null
    fail "$k" "$way" "$when" "$dir" "rank(s) still running after ddpdesk ended: $pids"
    continue
  fi
  why=""
  if [ "$way" != sigkill-ddpdesk ]; then
    [ "$rc" = 130 ] || why="ddpdesk exited $rc, not 130 (stopped)"
    grep -q '"state": *"Stopped"' "$dir/status.json" 2>/dev/null ||
      why="${why:+$why; }status.json does not say Stopped"
  fi
  if grep -l -E "$heap_or_sanitizer" "$dir.err" "$dir"/rank-*.log >/dev/null 2>&1; then
    why="${why:+$why; }$(grep -h -E "$heap_or_sanitizer" "$dir.err" "$dir"/rank-*.log | head -1)"
  fi
  if ((stepping)); then
    in_training=$((in_training + 1))
    if [ ! -s "$dir/checkpoint.pt" ]; then
      why="${why:+$why; }no checkpoint.pt after a stop in training"
    elif ! "$python" -c 'import sys, torch; torch.load(sys.argv[1])' "$dir/checkpoint.pt" \
      >"$dir.check" 2>&1; then
      why="${why:+$why; }its checkpoint does not load: $(tail -1 "$dir.check")"
    fi
  else
    at_start=$((at_start + 1))
  fi
  verdict "$k" "$way" "$when" "$dir" "$why"
done
echo "script_stop_soak: $n stops (seed $seed), $failures failed; stopped during start-up" \
  "$at_start, training $in_training"
[ "$failures" = 0 ] && rm -rf "$work"
[ "$failures" = 0 ]
