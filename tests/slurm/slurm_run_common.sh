# Sourced by the scripts that drive ddpdesk's Slurm launcher under with_slurm.sh (and
# with_sshd.sh): `. "$(dirname "$0")/slurm_run_common.sh" NAME WORKER DDPDESK`. Sets worker,
# ddpdesk, root and tmp (/tmp/ddpdesk-NAME-XXXXXX, removed at exit with ddpdesk's pid $dd_pid
# killed and this user's jobs cancelled; kept when DDPDESK_KEEP_TMP is set), the environment the
# ranks need, the two-task spec and slurm flags, fail/bad(), steps(), step_losses(), json_field()
# and reference_run(). Skips (exit 77) when the worker was built without its test-only faults,
# which every such script uses (a script that sets slurm_needs_faults=0 first uses none).
set -uo pipefail
[ "${slurm_needs_faults:-1}" = 0 ] || [ "${DDPDESK_FAULTS_BUILT:-1}" = 1 ] ||
  { echo "skipped: the worker was built without test faults"; exit 77; }
worker=$2
ddpdesk=$3
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d "/tmp/ddpdesk-$1-XXXXXX")
dd_pid=
cleanup() {
  [ -n "$dd_pid" ] && kill -9 "$dd_pid" 2>/dev/null
  scancel --user="$(id -un)" 2>/dev/null
  [ -n "${DDPDESK_KEEP_TMP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1 DDPDESK_DEBUG_STEPS=1 XDG_DATA_HOME=$tmp/xdg
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DDPDESK_COMM DDPDESK_MONITOR
runs=$XDG_DATA_HOME/ddpdesk/runs
spec=(--task fmnist-mlp --dataset-size 3200 --epochs 1 --batch-size 16 --accum-steps 2
  --log-interval 1 --system-interval 0)
slurm=(--launcher slurm --slurm-nodes 1 --slurm-tasks-per-node 2)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

steps() {  # "step param_hash" per rank-0 step line of a metrics file (a rank's, or a record's)
  /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("type") == "step" and m.get("rank", 0) == 0: print(m["step"], m.get("param_hash", ""))' "$1" 2>/dev/null
}
step_losses() {  # "step global_loss" of rank 0 per step, the last one recorded for each, by step
  /usr/bin/python3 -c '
import json, sys
last = {}
for line in open(sys.argv[1]):
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("type") == "step" and m.get("rank", 0) == 0: last[m["step"]] = m.get("global_loss")
for step in sorted(last): print(step, repr(last[step]))' "$1" 2>/dev/null
}
json_field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }

# The reference is the same for every script of one build (the same worker, the same spec, and
# the run is bitwise deterministic): the first script to need it keeps it in
# $DDPDESK_REFERENCE_DIR (the build's; the scripts hold the CTest lock "slurm", one at a time),
# keyed by the worker's size, time and path, the spec, and the variables that choose where its
# arithmetic runs (oneDNN's ISA cap falls back to the BLAS: other bits); a rebuilt worker makes
# a new one.
# Its step_losses are kept beside it and copied to $reference_losses.
reference_run() {  # the same spec, uninterrupted, launched locally: its last "step hash" in $reference
  local t0=$SECONDS key kept=
  reference_losses=$tmp/reference.losses
  key=$({ stat -L -c '%s %Y' "$worker"; echo "$worker ${spec[*]}"
    env | grep -E '^(DNNL_|ONEDNN_|OPENBLAS_|OMP_|MKL_)' | sort; } | cksum | cut -d' ' -f1)
  [ -n "${DDPDESK_REFERENCE_DIR:-}" ] && kept=$DDPDESK_REFERENCE_DIR/reference-$key
  if [ -n "$kept" ] && [ -s "$kept" ] && [ -s "$kept.losses" ]; then
    reference=$(cat "$kept")
    cp "$kept.losses" "$reference_losses"
    echo "reference: step/hash $reference (kept from an earlier script: $kept)"
    return
  fi
  "$root/scripts/launch-local.sh" 2 "$worker" "${spec[@]}" --run-dir "$tmp/local" >"$tmp/local.log" 2>&1 ||
    { echo "FAIL: the local reference run failed"; tail -n 15 "$tmp/local.log"; exit 1; }
  reference=$(steps "$tmp/local/metrics/rank-0.jsonl" | tail -n 1)
  [ -n "$reference" ] || { echo "FAIL: no steps in the local run"; exit 1; }
  step_losses "$tmp/local/metrics/rank-0.jsonl" >"$reference_losses"
  if [ -n "$kept" ] && mkdir -p "$DDPDESK_REFERENCE_DIR"; then
    cp "$reference_losses" "$kept.losses.$$" && mv "$kept.losses.$$" "$kept.losses"
    echo "$reference" >"$kept.$$" && mv "$kept.$$" "$kept"
  fi
  echo "reference: step/hash $reference ($((SECONDS - t0)) s)"
}
