#!/usr/bin/env bash
# stop_soak.sh N [BUILD_DIR]: N headless fmnist-mlp runs on 2 ranks, each stopped at a random
# moment (start-up and rendezvous, training, evaluation, a checkpoint being written) in one of
# four ways, taken in turn:
#   sigint-ddpdesk      Ctrl+C to ddpdesk (it relays one SIGTERM to every rank)
#   sigterm-one-rank    SIGTERM to one rank (it votes the stop to the other)
#   sigterm-every-rank  SIGTERM to every rank (as torchrun and Slurm's scancel send it)
#   sigkill-ddpdesk     the monitor killed: the ranks get SIGTERM from the kernel (PDEATHSIG)
# A run passes when ddpdesk exits 130 (0 if the run finished first; the monitor's death has no
# exit code to check), no rank outlives it, every rank wrote a clean exit record (stopped or
# finished, exit code 0), no rank's stderr holds a glibc heap message, a sanitizer report or a
# signal death, and a stop agreed past step 0 left a checkpoint that the worker loads
# (`ddpdesk-worker --check --resume`). Each failure is printed with the ranks' stderr; the run
# directories of failures are kept. Exit 0 when all N passed.
# The build directory defaults to ./build; the sanitizer build's (build-asan) works the same.
# DDPDESK_SOAK_SEED fixes the random moments; DDPDESK_SOAK_MAX_DELAY (s, default 4) bounds them.
set -uo pipefail
n=${1:?usage: stop_soak.sh N [BUILD_DIR]}
build=$(realpath "${2:-build}")
ddpdesk=$build/app/ddpdesk
worker=$build/app/ddpdesk-worker
[ -x "$ddpdesk" ] && [ -x "$worker" ] || { echo "stop_soak: no ddpdesk build in $build" >&2; exit 2; }
seed=${DDPDESK_SOAK_SEED:-$$}
RANDOM=$seed
max_delay_ms=$(awk -v s="${DDPDESK_SOAK_MAX_DELAY:-4}" 'BEGIN { printf "%d", s * 1000 }')
work=$(mktemp -d "${TMPDIR:-/tmp}/ddpdesk-soak.XXXXXX")
# 6400 samples on 2 ranks at batch 32: 100 optimizer steps an epoch, then an evaluation over the
# 10000 test images; a checkpoint every 25 steps. Stops land in all of these.
spec=(--task fmnist-mlp --epochs 50 --dataset-size 6400 --batch-size 32)
ways=(sigint-ddpdesk sigterm-one-rank sigterm-every-rank sigkill-ddpdesk)
heap_or_sanitizer='corrupted|free\(\)|double free|malloc\(\)|munmap_chunk|realloc\(\)|AddressSanitizer|LeakSanitizer|ThreadSanitizer|runtime error:|Segmentation fault|Aborted|terminate called|killed by signal'
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
failures=0 at_start=0 at_epoch=0 at_checkpoint=0 in_training=0 finished=0

. "$(dirname "$0")/soak_lib.sh"

for ((k = 1; k <= n; k++)); do
  way=${ways[(k - 1) % 4]}
  dir=$work/run-$k
  disown_it=0
  "$ddpdesk" --headless --nproc 2 "${spec[@]}" --checkpoint-every 25 --run-dir "$dir" \
    >"$dir.out" 2>"$dir.err" &
  monitor=$!
  # The monitor's death has no exit code to read; disowned, the shell does not report the kill.
  [ "$way" = sigkill-ddpdesk ] && disown "$monitor"
  pids=$(rank_pids "$dir.err")
  # A quarter of the stops come 0-0.6 s after the ranks started (loading, rendezvous); the rest
  # at a random moment of the first DDPDESK_SOAK_MAX_DELAY seconds of training, which holds
  # steps, evaluations and checkpoints.
  if ((RANDOM % 4 == 0)); then
    delay=$((RANDOM % 600))
    when="$delay ms after the ranks started"
  else
    for ((i = 0; i < 1200; i++)); do
      grep -q '"type":"step"' "$dir/metrics/rank-0.jsonl" 2>/dev/null && break
      alive "$monitor" || break
      sleep 0.05
    done
    delay=$(((RANDOM * 32768 + RANDOM) % max_delay_ms))
    when="$delay ms into training"
  fi
  sleep "$(awk -v ms="$delay" 'BEGIN { printf "%.3f", ms / 1000 }')"
  case $way in
    sigint-ddpdesk) kill -INT "$monitor" 2>/dev/null ;;
    sigterm-one-rank) set -- $pids && [ $# -ge 2 ] && kill -TERM "${!#}" 2>/dev/null ;;
    sigterm-every-rank) [ -n "$pids" ] && kill -TERM $pids 2>/dev/null ;;
    sigkill-ddpdesk) kill -KILL "$monitor" 2>/dev/null ;;
  esac
  # ddpdesk's exit (or, killed, its ranks'), within 120 s: a stop that hangs is a failure.
  rc=""
  for ((i = 0; i < 2400; i++)); do alive "$monitor" || break; sleep 0.05; done
  if alive "$monitor"; then
    kill -KILL "$monitor" $pids 2>/dev/null
    fail "$k" "$way" "$when" "$dir" "ddpdesk still running 120 s after the stop"
    continue
  fi
  if [ "$way" != sigkill-ddpdesk ]; then
    wait "$monitor"
    rc=$?
  fi
  if ! wait_gone "$pids" $([ "$way" = sigkill-ddpdesk ] && echo 120 || echo 10); then
    kill -KILL $pids 2>/dev/null
    fail "$k" "$way" "$when" "$dir" "rank(s) still running after ddpdesk ended: $pids"
    continue
  fi
  why=""
  if [ "$way" != sigkill-ddpdesk ] && [ "$rc" != 130 ] && [ "$rc" != 0 ]; then
    why="ddpdesk exited $rc, not 130 (stopped) or 0 (finished)"
  fi
  max_step=0
  for r in 0 1; do
    rec=$dir/rank-$r.exit.json
    if [ ! -f "$rec" ]; then
      why="${why:+$why; }rank $r wrote no exit record (killed?)"
      continue
    fi
    outcome=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["outcome"], j["exit_code"], j["step"])' "$rec")
    read -r o code step <<<"$outcome"
    if [ "$o" != stopped ] && [ "$o" != finished ] || [ "$code" != 0 ]; then
      why="${why:+$why; }rank $r ended $o with exit code $code"
    fi
    [ "$o" = finished ] && finished=$((finished + 1))
    ((step > max_step)) && max_step=$step
  done
  if grep -l -E "$heap_or_sanitizer" "$dir.err" "$dir"/rank-*.log >/dev/null 2>&1; then
    why="${why:+$why; }$(grep -h -E "$heap_or_sanitizer" "$dir.err" "$dir"/rank-*.log | head -1)"
  fi
  if ((max_step > 0)); then
    ckpt=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["checkpoint"])' \
      "$dir/rank-0.exit.json" 2>/dev/null)
    if [ -z "$ckpt" ] || [ ! -s "$ckpt" ]; then
      why="${why:+$why; }no checkpoint after a stop at step $max_step"
    elif ! "$worker" --check "${spec[@]}" --resume "$dir" >"$dir.check" 2>&1 ||
      ! grep -q '"ok":true' "$dir.check"; then
      # A run that ended finished has nothing left to resume: its checkpoint loads, but the
      # check refuses it as past the epochs; it is not what a stop left.
      grep -q 'already' "$dir.check" ||
        why="${why:+$why; }its checkpoint does not load: $(tail -1 "$dir.check")"
    fi
    # Where the stop landed: at the first step, the signal came during start-up; at an
    # epoch's or a checkpoint's first step, while the evaluation or the checkpoint writer ran
    # (or during that one step).
    if ((max_step == 1)); then
      at_start=$((at_start + 1))
    elif ((max_step % 100 == 1)); then
      at_epoch=$((at_epoch + 1))
    elif ((max_step % 25 == 1)); then
      at_checkpoint=$((at_checkpoint + 1))
    else
      in_training=$((in_training + 1))
    fi
  else
    at_start=$((at_start + 1))
  fi
  verdict "$k" "$way" "$when" "$dir" "$why"
done
echo "stop_soak: $n stops (seed $seed), $failures failed; stopped during start-up $at_start," \
  "training $in_training, evaluation $at_epoch, a checkpoint $at_checkpoint;" \
  "$finished rank(s) had finished"
[ "$failures" = 0 ] && rm -rf "$work"
[ "$failures" = 0 ]
