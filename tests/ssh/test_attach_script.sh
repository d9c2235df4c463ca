#!/usr/bin/env bash
# Under a private sshd (with_sshd.sh): a Python-script run without the client (examples/
# print_only.py on two ranks, `ddpdesk --headless --task python`) followed while it runs by
# `ddpdesk --headless --attach ssh://…/DIR`. No rank file can say such a run ended: the follower
# ends with the status.json the run's own monitor wrote (mirrored over ssh).
#  1. A run to its end: the follower exits 0, "finished after", every printed step charted, and
#     its summary has each rank's system use, from the metrics/system.jsonl that monitor
#     sampled (no pid can be sampled from here).
#  2. A run stopped with Ctrl+C in its monitor: the follower ends Stopped (exit 130).
#  3. A run whose rank 1 raises: the follower ends Failed (exit 1), with the recorded reason.
#   with_sshd.sh tests/ssh/test_attach_script.sh WORKER DDPDESK
set -uo pipefail
source "$(dirname "$0")/common.sh"
script=$(cd "$(dirname "$0")/../../examples" && pwd)/print_only.py
export DDPDESK_WORKER=$worker

# start NAME STEPS [SCRIPT]: a two-rank run of print_only.py (or SCRIPT; 0.1 s a step) under
# $tmp/NAME, $run its monitor's pid; then, once its ranks started (the directory is there before
# its spec.json), `--attach` over ssh, $attach its pid.
start() {
  export XDG_DATA_HOME=$tmp/$1
  timeout 120 "$ddpdesk" --headless --task python --script "${3:-$script}" \
    --python /usr/bin/python3 --nproc 2 --script-args "--steps $2 --sleep 0.1" \
    >"$tmp/$1.run.out" 2>"$tmp/$1.run.err" &
  run=$!; bg+=($!)
  dir=
  for _ in $(seq 600); do
    dir=$(ls -d "$XDG_DATA_HOME"/ddpdesk/runs/*/ 2>/dev/null | head -n 1)
    [ -n "$dir" ] && [ -f "$dir/rank-0.log" ] && [ -f "$dir/spec.json" ] && break
    sleep 0.1
  done
  [ -n "$dir" ] || { bad "$1: the run made no directory: $(cat "$tmp/$1.run.err")"; exit 1; }
  dir=${dir%/}
  timeout 120 "$ddpdesk" --headless --attach "$(url "$dir")" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  attach=$!; bg+=($!)
}

# 1. To its end.
start done 40
wait "$run"; rc=$?
[ "$rc" -eq 0 ] || bad "the run exited $rc: $(cat "$tmp/done.run.err")"
wait "$attach"; arc=$?
[ "$arc" -eq 0 ] || bad "the ssh attach exited $arc (want 0): $(cat "$tmp/done.out" "$tmp/done.err")"
grep -q "^finished after .*: 40 steps," "$tmp/done.out" ||
  bad "the ssh attach did not end Finished with 40 steps: $(cat "$tmp/done.out" "$tmp/done.err")"
# "system use per rank:", then "rank  peak RSS  mean CPU %", then a row for each rank.
for r in 0 1; do
  sed -n '/^system use per rank:/,/^$/p' "$tmp/done.out" | grep -Eq "^$r +[0-9.]+ [KMG]iB" ||
    bad "no system use of rank $r in the ssh attach's summary: $(cat "$tmp/done.out")"
done

# 2. Stopped where it runs, once both ranks printed a few steps.
start stop 2000
for r in 0 1; do
  wait_for "step 5 loss=" "$dir/rank-$r.log" 600 || bad "rank $r printed no 5 steps"
done
kill -INT "$run"
wait "$run"; rc=$?
[ "$rc" -eq 130 ] || bad "the stopped run exited $rc (want 130): $(cat "$tmp/stop.run.err")"
wait "$attach"; arc=$?
[ "$arc" -eq 130 ] || bad "the ssh attach of the stopped run exited $arc (want 130): $(cat "$tmp/stop.out" "$tmp/stop.err")"
grep -q "^stopped after " "$tmp/stop.out" ||
  bad "the ssh attach did not end Stopped: $(cat "$tmp/stop.out" "$tmp/stop.err")"

# 3. Failed: rank 1 raises after a few steps.
cat >"$tmp/fails.py" <<'PY'
import os, sys, time
for step in range(1, 6):
    print(f"step {step} loss={1.0 / step}", flush=True)
    time.sleep(0.1)
if os.environ["RANK"] == "1":
    raise RuntimeError("the loss went away")
PY
start failed 0 "$tmp/fails.py"
wait "$run"; rc=$?
[ "$rc" -eq 1 ] || bad "the failing run exited $rc (want 1): $(cat "$tmp/failed.run.err")"
wait "$attach"; arc=$?
[ "$arc" -eq 1 ] || bad "the ssh attach of the failed run exited $arc (want 1): $(cat "$tmp/failed.out" "$tmp/failed.err")"
grep -q "^failed after " "$tmp/failed.out" ||
  bad "the ssh attach did not end Failed: $(cat "$tmp/failed.out" "$tmp/failed.err")"
grep -q "RuntimeError: the loss went away" "$tmp/failed.err" "$tmp/failed.out" ||
  bad "the ssh attach's failure does not name the error: $(cat "$tmp/failed.out" "$tmp/failed.err")"

no_ssh_left "script runs"
[ "$fail" -eq 0 ] && echo "ok: script runs without the client followed over ssh end Finished, Stopped and Failed, with their ranks' system use"
exit $fail
