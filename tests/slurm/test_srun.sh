#!/usr/bin/env bash
# Under a real Slurm (started by with_slurm.sh): a plain `srun -n 2 ddpdesk-worker …`, with
# nothing but Slurm's own variables (no MASTER_ADDR/PORT, no torchrun variables), trains, and its
# parameters after the last step are bitwise those of the same spec launched locally with
# torchrun's variables; the same with the Gloo communicator forced (the path that spans nodes).
#   with_slurm.sh tests/slurm/test_srun.sh WORKER
set -uo pipefail
worker=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/ddpdesk-srun-test-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1 DDPDESK_DEBUG_STEPS=1
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DDPDESK_COMM
spec=(--task seed --dataset-size 96 --epochs 1 --batch-size 4 --accum-steps 2 --log-interval 1)

# The parameter hash after rank 0's last step, from its metrics file.
last_hash() {
  /usr/bin/python3 -c '
import json, sys
steps = [m for m in map(json.loads, open(sys.argv[1])) if m.get("type") == "step"]
print(steps[-1]["param_hash"] if steps else "")' "$1" 2>/dev/null
}

fail=0
check() {  # name: the run "$name" ended 0 with both ranks' files and the reference's last hash
  local name=$1 rc=$2
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $name: exit $rc"; tail -n 15 "$tmp/$name.log"; fail=1; return
  fi
  for r in 0 1; do
    [ -s "$tmp/$name-m$r.jsonl" ] || { echo "FAIL $name: rank $r wrote no metrics"; fail=1; return; }
  done
  grep -q "world=2" "$tmp/$name.log" || { echo "FAIL $name: no world=2 summary"; fail=1; return; }
  local h
  h=$(last_hash "$tmp/$name-m0.jsonl")
  if [ -z "$h" ] || [ "$h" != "$reference" ]; then
    echo "FAIL $name: last parameter hash '$h', locally '$reference'"; fail=1; return
  fi
  echo "ok $name: exit 0, world 2, parameters bitwise equal to the local run"
}

"$root/scripts/launch-local.sh" 2 "$worker" "${spec[@]}" --run-dir "$tmp/local" \
  --metrics-file "$tmp/local-m{rank}.jsonl" >"$tmp/local.log" 2>&1 ||
  { echo "FAIL: the local reference run failed"; tail -n 15 "$tmp/local.log"; exit 1; }
reference=$(last_hash "$tmp/local-m0.jsonl")
[ -n "$reference" ] || { echo "FAIL: the local run's metrics have no parameter hash"; exit 1; }

timeout 120 srun -n 2 --kill-on-bad-exit=1 "$worker" "${spec[@]}" --run-dir "$tmp/srun" \
  --metrics-file "$tmp/srun-m{rank}.jsonl" >"$tmp/srun.log" 2>&1
check srun $?
DDPDESK_COMM=gloo timeout 120 srun -n 2 --kill-on-bad-exit=1 "$worker" "${spec[@]}" \
  --run-dir "$tmp/gloo" --metrics-file "$tmp/gloo-m{rank}.jsonl" >"$tmp/gloo.log" 2>&1
check gloo $?
exit $fail
