#!/usr/bin/env bash
# Under a real Slurm (started by with_slurm.sh): `ddpdesk --headless --attach DIR`, started before
# the ranks, follows a plain `srun -n 2 ddpdesk-worker … --run-dir DIR` (no monitor socket, no
# MASTER_*) through the ranks' metrics/rank-N.jsonl files to its end: exit 0, 50 steps, both pids.
#   with_slurm.sh tests/slurm/test_attach_srun.sh WORKER DDPDESK
set -uo pipefail
worker=$1
ddpdesk=$2
tmp=$(mktemp -d /tmp/ddpdesk-attach-srun-XXXXXX)
attach_pid=
trap '[ -n "$attach_pid" ] && kill "$attach_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DDPDESK_COMM DDPDESK_MONITOR
mkdir -p "$tmp/run"

timeout 150 "$ddpdesk" --headless --attach "$tmp/run" >"$tmp/attach.out" 2>"$tmp/attach.err" &
attach_pid=$!
timeout 120 srun -n 2 --kill-on-bad-exit=1 "$worker" --task seed --dataset-size 400 --epochs 1 \
  --run-dir "$tmp/run" >"$tmp/srun.log" 2>&1
srun_rc=$?
wait "$attach_pid"
attach_rc=$?
attach_pid=
fail=0
[ "$srun_rc" -eq 0 ] || { echo "FAIL: srun exited $srun_rc"; tail -n 15 "$tmp/srun.log"; fail=1; }
[ "$attach_rc" -eq 0 ] || { echo "FAIL: ddpdesk --attach exited $attach_rc"; cat "$tmp/attach.err"; fail=1; }
grep -q "^finished after .*: 50 steps" "$tmp/attach.out" ||
  { echo "FAIL: no 'finished … 50 steps' summary"; cat "$tmp/attach.out"; fail=1; }
for r in 0 1; do
  pid=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' \
    "$tmp/run/metrics/rank-$r.jsonl" 2>/dev/null)
  grep -q "^$r  *$pid " "$tmp/attach.out" || { echo "FAIL: rank $r (pid $pid) not in the summary"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "ok: ddpdesk --attach followed srun's two ranks to their end"
exit $fail
