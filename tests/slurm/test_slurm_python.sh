#!/usr/bin/env bash
# Under a real Slurm (started by with_slurm.sh): Python-script runs (task python) submitted with
# `ddpdesk --headless --launcher slurm`. Each task starts through ddpdesk-rank, so a torchrun
# script finds its variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, ... checked as a
# rank saw them) and the placeholders filled; a script that only prints its losses is charted
# from its rank-N.log; examples/ddp_train.py (Gloo, the client) trains two ranks whose losses in
# the run's record equal those the script wrote itself; a stop reaches a script with the client
# (checkpoint, Stopped) and one without (Stopped, not Failed); a failing rank is named with its
# traceback; through a login node over ssh the same script runs with the cluster's paths and its
# printed losses reach the local record; bad input is one line with exit 2.
#   with_slurm.sh with_sshd.sh tests/slurm/test_slurm_python.sh WORKER DDPDESK
slurm_needs_faults=0
. "$(dirname "$0")/slurm_run_common.sh" slurm-python "$@"

no_rank_left() {  # no rank of this test's runs is alive
  if pgrep -f "$tmp/\|tests/slurm/py/\|examples/ddp_train.py" >/dev/null; then
    bad "$1: processes left: $(pgrep -af "$tmp/\|tests/slurm/py/\|examples/ddp_train.py" | head -3)"
  fi
}
ranks_py=$root/tests/slurm/py/torchrun_rank.py
py=/usr/bin/python3  # Debian's, with python3-torch (a python3 first on PATH may lack torch)
script=(--task python --script "$ranks_py" --python "$py" "${slurm[@]}" --batch-size 24)
# "rank step loss" of every step message in the run's record (metrics.jsonl)
record_steps() {
  /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("type") == "step": print(m["rank"], m["step"], repr(m["loss"]))' "$1/metrics.jsonl"
}

# 1. A script that only prints: torchrun's variables as the ranks saw them, losses from output.
timeout 120 "$ddpdesk" --headless "${script[@]}" --script-args '--steps 10 --batch {batch_size}' \
  --run-dir "$tmp/print" >"$tmp/print.out" 2>"$tmp/print.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "print: exit $rc, expected 0"; tail -n 20 "$tmp/print.err"; }
job=$(json_field "$tmp/print/slurm.json" job_id)
grep -q "/ddpdesk-rank $py $ranks_py --steps 10 --batch 24$" "$tmp/print/job.sbatch" ||
  bad "print: job.sbatch does not start the script through ddpdesk-rank: $(tail -n 1 "$tmp/print/job.sbatch")"
/usr/bin/python3 - "$tmp/print" "$(hostname -s)" "$((20000 + job % 10000))" "$(dirname "$worker")" <<'PY' || bad "print: the ranks' environment is not torchrun's"
import json, os, sys
run, node, port, bindir = sys.argv[1:]
client = os.path.normpath(os.path.join(bindir, "../share/ddpdesk/python"))
for r in (0, 1):
    e = json.load(open(os.path.join(run, "env-%d.json" % r)))
    want = {"RANK": str(r), "WORLD_SIZE": "2", "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(r),
            "ROLE_WORLD_SIZE": "2", "MASTER_ADDR": node, "MASTER_PORT": port,
            "TORCHELASTIC_RUN_ID": "print", "DDPDESK_BATCH_SIZE": "24", "DDPDESK_ACCUM_STEPS": "1",
            "DDPDESK_RUN_DIR": run, "DDPDESK_STOP_FILE": run + "/stop-requested",
            "cwd": run, "batch_arg": 24}
    for k, v in want.items():
        assert e[k] == v, "rank %d: %s=%r, expected %r" % (r, k, e[k], v)
    assert e["PYTHONPATH"].split(":")[0] == client, e["PYTHONPATH"]
PY
steps_seen=$(record_steps "$tmp/print" | sort -n -k1 -k2)
[ "$(echo "$steps_seen" | wc -l)" -eq 20 ] || bad "print: $(echo "$steps_seen" | wc -l) printed losses recorded, expected 20"
echo "$steps_seen" | grep -q "^1 10 1.1$" || bad "print: rank 1's step 10 is not 1.1: $(echo "$steps_seen" | tail -n 1)"
grep -q '"state": "Finished"' "$tmp/print/status.json" || bad "print: status.json not Finished"
no_rank_left print
echo "print: job $job, $(echo "$steps_seen" | wc -l) printed losses; ranks at $(json_field "$tmp/print/env-1.json" MASTER_ADDR):$(json_field "$tmp/print/env-1.json" MASTER_PORT)"

# 2. A real DDP script with the client: the record's losses are those the script computed.
ddp=(--task python --script "$root/examples/ddp_train.py" --python "$py" "${slurm[@]}" --batch-size 16 --accum-steps 2)
timeout 180 "$ddpdesk" --headless "${ddp[@]}" --run-dir "$tmp/ddp" --script-args \
  "--epochs 1 --samples 512 --batch-size {batch_size} --accum-steps {accum_steps} --losses $tmp/ddp-losses" \
  >"$tmp/ddp.out" 2>"$tmp/ddp.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "ddp: exit $rc, expected 0"; tail -n 20 "$tmp/ddp.err"; }
for r in 0 1; do
  want=$(awk -v r=$r '{ print r, $1, $2 }' "$tmp/ddp-losses.rank-$r")
  got=$(record_steps "$tmp/ddp" | awk -v r=$r '$1 == r')
  [ -n "$want" ] && [ "$want" = "$got" ] || bad "ddp: rank $r's recorded losses differ from the script's: '$got' vs '$want'"
done
echo "ddp: $(wc -l <"$tmp/ddp-losses.rank-0") steps per rank, the record equal to the script's losses"
no_rank_left ddp

# 3. Stops (Ctrl+C of ddpdesk: the stop file and scancel --signal=TERM): exit 130, Stopped.
stop_script() {  # name condition ddpdesk-args...
  local name=$1 cond=$2 rc; shift 2
  timeout 180 "$ddpdesk" --headless "$@" --run-dir "$tmp/$name" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  dd_pid=$!
  for _ in $(seq 1200); do "$cond" && break; kill -0 "$dd_pid" 2>/dev/null || break; sleep 0.05; done
  "$cond" || bad "$name: the condition to stop at ($cond) never held"
  kill -INT "$dd_pid"
  wait "$dd_pid"
  rc=$?
  dd_pid=
  [ "$rc" -eq 130 ] || { bad "$name: exit $rc, expected 130"; tail -n 20 "$tmp/$name.err"; }
  grep -q '"state": "Stopped"' "$tmp/$name/status.json" ||
    bad "$name: status.json not Stopped: $(tail -n 3 "$tmp/$name.err")"
  no_rank_left "$name"
  echo "$name: $(grep -m1 "stopped" "$tmp/$name.err")"
}
three_client_steps() { [ "$(cat "$tmp/ddpstop/metrics/rank-1.jsonl" 2>/dev/null | grep -c '"type":"step"')" -ge 3 ]; }
stop_script ddpstop three_client_steps "${ddp[@]}" --script-args "--epochs 100 --step-sleep 0.2"
[ -s "$tmp/ddpstop/checkpoint.pt" ] || bad "ddpstop: the script wrote no checkpoint on the stop"
grep -q '"type":"event".*"stopped"' "$tmp/ddpstop/metrics/rank-0.jsonl" || bad "ddpstop: rank 0 did not say it stopped"
printed_steps() { [ "$(record_steps "$tmp/printstop" 2>/dev/null | wc -l)" -ge 6 ]; }
stop_script printstop printed_steps "${script[@]}" --script-args '--steps 100000 --sleep 0.1'

# 4. A rank fails: named, with its traceback's last lines; the other is ended by srun.
timeout 120 "$ddpdesk" --headless "${script[@]}" --script-args '--steps 50 --sleep 0.1 --fail-at 3' \
  --run-dir "$tmp/fails" >"$tmp/fails.out" 2>"$tmp/fails.err"
rc=$?
[ "$rc" -eq 1 ] || bad "fails: exit $rc, expected 1"
grep -q "run failed: rank 1 on $(hostname -s)" "$tmp/fails.err" || { bad "fails: rank 1 not named"; tail -n 20 "$tmp/fails.err"; }
grep -q "ZeroDivisionError: division by zero" "$tmp/fails.err" || bad "fails: no traceback line"
no_rank_left fails
echo "fails: $(grep -m1 "run failed" "$tmp/fails.err")"

# 5. Through a login node (the private sshd's host: this one): the script's paths are the
#    cluster's, the batch script is written and submitted there, the ranks' rank-N.log comes
#    back through the ssh mirror and its printed losses are charted in the local record.
login=root@127.0.0.1:$DDPDESK_SSH_PORT
timeout --foreground 120 "$ddpdesk" --headless "${script[@]}" --script-args '--steps 10' \
  --slurm-login "$login" --slurm-remote-dir "$tmp/cluster/py" --run-dir "$tmp/login" \
  --slurm-extra "--export=ALL,OMP_NUM_THREADS=1" >"$tmp/login.out" 2>"$tmp/login.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "login: exit $rc, expected 0"; tail -n 20 "$tmp/login.err"; }
grep -q "/ddpdesk-rank $py $ranks_py --steps 10$" "$tmp/cluster/py/job.sbatch" ||
  bad "login: the cluster's job.sbatch does not start the script through ddpdesk-rank"
[ "$(json_field "$tmp/cluster/py/env-1.json" RANK)" = 1 ] || bad "login: rank 1 did not run there"
[ "$(record_steps "$tmp/login" | wc -l)" -eq 20 ] ||
  bad "login: $(record_steps "$tmp/login" | wc -l) printed losses in the local record, expected 20"
grep -q '"state": "Finished"' "$tmp/login/status.json" || bad "login: the record is not Finished"
no_rank_left login
echo "login: $(record_steps "$tmp/login" | wc -l) printed losses through $login"

# 6. Bad input: one line, exit 2, no run directory.
bad_input() {  # name expected-text ddpdesk-args...
  local name=$1 want=$2 rc; shift 2
  "$ddpdesk" --headless "$@" --run-dir "$tmp/$name" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  [ "$rc" -eq 2 ] || bad "$name: exit $rc, expected 2"
  grep -q -- "$want" "$tmp/$name.err" || bad "$name: no '$want' in: $(cat "$tmp/$name.err")"
  [ "$(wc -l <"$tmp/$name.err")" -eq 1 ] || bad "$name: not one line: $(cat "$tmp/$name.err")"
  [ ! -e "$tmp/$name" ] || bad "$name: the run directory was left behind"
  echo "ok $name: $(cat "$tmp/$name.err")"
}
bad_input no-script "invalid --script '$tmp/nosuch.py': no such file" \
  --task python --script "$tmp/nosuch.py" "${slurm[@]}"
bad_input via-login-relative "invalid --script 'train.py': must be an absolute path on the cluster" \
  --task python --script train.py "${slurm[@]}" --slurm-login user@login
[ -z "$(squeue -h 2>/dev/null)" ] || bad "jobs left in the queue: $(squeue -h)"
exit $fail
