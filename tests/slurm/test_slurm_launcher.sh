#!/usr/bin/env bash
# Under a real Slurm (started by with_slurm.sh): `ddpdesk --headless --launcher slurm` submits a
# two-task CPU fmnist-mlp job with sbatch, follows it live, stops it gracefully (Ctrl+C:
# scancel --signal=TERM, the ranks checkpoint and exit 0), resumes it as a new job from the
# checkpoint (its last parameters bitwise those of an uninterrupted local run), names the rank of
# a job whose rank dies with its node and output tail (also through `--attach` of its directory,
# which follows the job's state and ends with its outcome), stops the job in each of its states
# (ddpdesk starved past the job's start, still pending — followed by an `--attach` that shows
# Slurm's reason —, running before its step), runs a queue whose first entry sbatch --test-only
# refuses (the other named by its job id), and refuses bad input in one line with exit 2 and no
# run directory left: sbatch missing, a partition the cluster lacks, a bad time.
#   with_slurm.sh tests/slurm/test_slurm_launcher.sh WORKER DDPDESK
. "$(dirname "$0")/slurm_run_common.sh" slurm-launcher "$@"

no_rank_left() {  # no worker of this test's runs is alive
  if pgrep -f "$tmp/" >/dev/null; then bad "$1: processes left: $(pgrep -af "$tmp/" | head -3)"; fi
}

reference_run

# Stops: stop_when NAME CONDITION runs ddpdesk on a Slurm job in $tmp/NAME (its output in
# $tmp/NAME.out/.err; more flags in stop_args) with rank 0 slowed (150 ms per micro-step) so a stop
# lands mid-run, sends Ctrl+C once CONDITION holds, and expects exit 130, Stopped and no process
# left.
stop_when() {  # name condition: ddpdesk with the spec and stop_args, stopped once condition holds
  local name=$1 rc
  DDPDESK_FAULT_SLOW_RANK=0:150 timeout 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" \
    "${stop_args[@]}" --run-dir "$tmp/$name" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  dd_pid=$!
  for _ in $(seq 1200); do "$2" && break; kill -0 "$dd_pid" 2>/dev/null || break; sleep 0.05; done
  "$2" || bad "$name: the condition to stop at ($2) never held"
  [ -n "$frozen" ] && kill -CONT "$frozen"
  kill -INT "$dd_pid"
  wait "$dd_pid"
  rc=$?
  dd_pid=
  [ "$rc" -eq 130 ] || { bad "$name: exit $rc, expected 130"; tail -n 20 "$tmp/$name.err"; }
  grep -q '"state": "Stopped"' "$tmp/$name/status.json" || bad "$name: status.json not Stopped"
  no_rank_left "$name"
}
stopped_with_checkpoint() {  # name: both ranks stopped, a checkpoint, the job completed
  ls "$tmp/$1"/checkpoints/step-*.pt >/dev/null 2>&1 || bad "$1: no checkpoint after the stop"
  for r in 0 1; do
    grep -q '"outcome": *"stopped"' "$tmp/$1/rank-$r.exit.json" 2>/dev/null ||
      bad "$1: rank $r did not exit as stopped: $(cat "$tmp/$1/rank-$r.exit.json" 2>/dev/null)"
  done
  grep -q "ended: COMPLETED" "$tmp/$1/monitor.log" ||
    bad "$1: the job did not complete: $(grep ended "$tmp/$1/monitor.log")"
}

# 1. Submit, watch live, stop gracefully.
run=$tmp/run
live=0
five_steps_live() {
  [ "$(steps "$run/metrics/rank-0.jsonl" | wc -l)" -ge 5 ] || return 1
  # Steps arrived while Slurm still calls the job running.
  job=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$run/slurm.json" 2>/dev/null)
  [ "$(squeue -h -j "$job" -o %T 2>/dev/null)" = RUNNING ] && live=1
  return 0
}
stop_args=(--slurm-time 5)
frozen=
stop_when run five_steps_live
[ "$live" -eq 1 ] || bad "no steps arrived while the job was running"
stopped_with_checkpoint run
grep -q "^#SBATCH --ntasks-per-node=2" "$run/job.sbatch" || bad "no job.sbatch with --ntasks-per-node=2"
grep -q "^#SBATCH --time=5$" "$run/job.sbatch" || bad "no --time=5 in job.sbatch"
grep -q "job $job submitted: batch script $run/job.sbatch" "$tmp/run.err" || bad "no 'job $job submitted' line"
grep -q "job $job running on " "$tmp/run.err" || { bad "no 'job $job running on' line"; cat "$tmp/run.err"; }
stopped_at=$(steps "$run/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)
[ "${stopped_at:-50}" -lt 50 ] || bad "the stop came after the last step ($stopped_at)"
echo "stopped job $job at step $stopped_at"

# 2. Resume: a new job from the checkpoint, in the same directory.
timeout 120 "$ddpdesk" --headless --resume "$run" >"$tmp/second.out" 2>"$tmp/second.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "resumed run exited $rc"; tail -n 20 "$tmp/second.err"; }
job2=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["job_id"], *d["earlier_jobs"])' "$run/slurm.json")
[ "${job2% *}" != "$job" ] && [ "${job2#* }" = "$job" ] ||
  bad "slurm.json does not name a new job after $job: $job2"
first=$(steps "$run/metrics/rank-0.jsonl" | head -n 1 | cut -d' ' -f1)
last=$(steps "$run/metrics/rank-0.jsonl" | tail -n 1)
[ "$first" = "$((stopped_at + 1))" ] || bad "the resumed job began at step $first, not $((stopped_at + 1))"
[ "$last" = "$reference" ] || bad "resumed run ended at '$last', the uninterrupted one at '$reference'"
grep -q "^finished after" "$tmp/second.out" || bad "no 'finished' summary after the resume"
no_rank_left "after the resume"
echo "resumed as job ${job2% *}: steps $first.. end bitwise at '$last'"

# 3. A rank dies (SIGKILL while writing step 3's checkpoint): failed, the rank named with its
#    node and its output's last lines — by the submitting ddpdesk and by a `--attach` of its
#    directory started once the job was submitted, which follows the job itself (its state
#    through squeue/scontrol) and ends with the job's outcome.
DDPDESK_FAULT_KILL_IN_CHECKPOINT=3 timeout 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" \
  --checkpoint-every 3 --run-dir "$tmp/dies" >"$tmp/dies.out" 2>"$tmp/dies.err" &
dd_pid=$!
for _ in $(seq 1200); do [ -s "$tmp/dies/slurm.json" ] && break; sleep 0.05; done
timeout 120 "$ddpdesk" --headless --attach "$tmp/dies" >"$tmp/dies-attach.out" 2>"$tmp/dies-attach.err"
arc=$?
wait "$dd_pid"
rc=$?
dd_pid=
[ "$rc" -eq 1 ] || bad "the run whose rank died exited $rc, expected 1"
node=$(hostname -s)
grep -q "run failed: rank 0 on $node" "$tmp/dies.err" ||
  { bad "rank 0 on $node not named"; tail -n 20 "$tmp/dies.err"; }
grep -q "last lines of rank 0's output" "$tmp/dies.err" || bad "no output tail of rank 0"
grep -q '"state": "Failed"' "$tmp/dies/status.json" || bad "status.json of the dead rank's run is not Failed"
djob=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$tmp/dies/slurm.json")
[ "$arc" -eq 1 ] || bad "the attach to the run whose rank died exited $arc, expected 1"
grep -q "following $tmp/dies (metrics/rank-N.jsonl, Slurm job $djob)" "$tmp/dies-attach.err" ||
  bad "the attach did not follow job $djob: $(head -n 3 "$tmp/dies-attach.err")"
grep -q "run failed: rank 0 on $node: .* (job $djob failed" "$tmp/dies-attach.err" ||
  { bad "the attach did not name rank 0 on $node with the job's outcome"; tail -n 20 "$tmp/dies-attach.err"; }
grep -q "last lines of rank 0's output" "$tmp/dies-attach.err" || bad "the attach gave no output tail of rank 0"
no_rank_left "after the rank died"
echo "a dying rank: $(grep -m1 "run failed" "$tmp/dies.err")"
echo "followed: $(grep -m1 "run failed" "$tmp/dies-attach.err")"

# 3b. Rank 1 killed (SIGKILL) mid-run: rank 0 fails because its peer is gone and says which (the
#     error's peer), and srun may list task 0 before task 1 (tasks that ended together are
#     listed in task order): the run names rank 1, the rank that died.
DDPDESK_FAULT_SLOW_RANK=0:40 timeout 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" \
  --run-dir "$tmp/killed" >"$tmp/killed.out" 2>"$tmp/killed.err" &
dd_pid=$!
pid1=
for _ in $(seq 1200); do
  if [ "$(grep -c '"type":"step"' "$tmp/killed/metrics/rank-1.jsonl" 2>/dev/null)" -ge 3 ]; then
    pid1=$(/usr/bin/python3 -c 'import json,sys
print(next(json.loads(l)["pid"] for l in open(sys.argv[1]) if "\"hello\"" in l))' \
      "$tmp/killed/metrics/rank-1.jsonl")
    break
  fi
  kill -0 "$dd_pid" 2>/dev/null || break
  sleep 0.05
done
[ -n "$pid1" ] && kill -9 "$pid1"
wait "$dd_pid"
rc=$?
dd_pid=
[ -n "$pid1" ] || bad "rank 1 never stepped: nothing was killed"
[ "$rc" -eq 1 ] || bad "the run whose rank 1 was killed exited $rc, expected 1"
grep -q "run failed: rank 1 on $node" "$tmp/killed.err" ||
  { bad "rank 1 on $node not named"; tail -n 12 "$tmp/killed.err"; cat "$tmp"/killed/slurm-*.out; }
no_rank_left "after rank 1 was killed"
echo "a killed rank 1: $(grep -m1 "run failed" "$tmp/killed.err"); srun said: $(grep -h "srun: error" "$tmp"/killed/slurm-*.out | tr '\n' ' ')"

# 4. Stops in every state of the job, with stop_when and stopped_with_checkpoint as in 1.
# a. ddpdesk starved (SIGSTOP) from its first poll (pending) until the job ran 5 steps: its last
#    word on the job is stale, yet the stop must signal the ranks, not cancel the job (which
#    killed them without a checkpoint under load). The job is submitted held and released only
#    once ddpdesk is frozen, so ddpdesk sees it pending however slowly it starts (a job that
#    started before ddpdesk's first poll never held the condition).
frozen=
stale_five_steps() {
  grep -q "job [0-9]* pending" "$tmp/stale/monitor.log" 2>/dev/null || return 1
  if [ -z "$frozen" ]; then
    frozen=$(pgrep -P "$dd_pid")
    kill -STOP "$frozen"
    scontrol release "$(squeue -h -n ddpdesk-fmnist-mlp -t PD -o %i)"
  fi
  [ "$(steps "$tmp/stale/metrics/rank-0.jsonl" | wc -l)" -ge 5 ]
}
stop_args=(--slurm-extra --hold)
stop_when stale stale_five_steps
frozen=
stopped_with_checkpoint stale
echo "stale state: $(grep -m1 "signalled\|state=PENDING" "$tmp/stale/monitor.log" | cut -d' ' -f2-)"
# b. Pending (held): cancelled, nothing trained. A `--attach` of the directory started while the
#    job is held shows it pending with Slurm's reason, and ends with the job: cancelled, not by it.
held_attach=
held() {
  [ "$(squeue -h -n ddpdesk-fmnist-mlp -o %r 2>/dev/null)" = JobHeldUser ] || return 1
  if [ -z "$held_attach" ]; then
    # From $tmp with a relative path: no_rank_left looks for "$tmp/" in command lines.
    (cd "$tmp" && exec timeout 120 "$ddpdesk" --headless --attach held >held-attach.out 2>held-attach.err) &
    held_attach=$!
  fi
  grep -q "job [0-9]* pending (JobHeldUser)" "$tmp/held-attach.err"
}
stop_args=(--slurm-extra --hold)
stop_when held held
wait "$held_attach"
arc=$?
[ "$arc" -eq 1 ] || bad "held: the attach exited $arc, expected 1"
grep -q "run failed: job [0-9]* cancelled.* (not from this monitor)" "$tmp/held-attach.err" ||
  bad "held: the attach did not end with the cancelled job: $(tail -n 3 "$tmp/held-attach.err")"
grep -q "cancelled before its ranks started: nothing was trained" "$tmp/held.err" ||
  bad "held: no 'nothing was trained': $(tail -n 3 "$tmp/held.err")"
[ ! -e "$tmp/held/metrics/rank-0.jsonl" ] || bad "held: a rank ran"
[ -z "$(squeue -h 2>/dev/null)" ] || bad "held: the job is still queued: $(squeue -h)"
echo "held: $(tail -n 1 "$tmp/held.err")"
# c. Running, the batch shell not at its step yet: an srun first on PATH that waits for the stop
#    (as a slow prolog or a busy node would keep it), then starts the ranks, which find the stop
#    file.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/srun" <<EOF
#!/bin/bash
touch "$tmp/in-srun"
for _ in \$(seq 200); do [ -e stop-requested ] && break; sleep 0.05; done
PATH='$PATH' exec srun "\$@"
EOF
chmod +x "$tmp/bin/srun"
in_srun() { [ -e "$tmp/in-srun" ]; }
stop_args=()
PATH=$tmp/bin:$PATH stop_when nostep in_srun
stopped_with_checkpoint nostep
echo "no step yet: stopped at step $(steps "$tmp/nostep/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)"

# 5. A queue of Slurm runs goes through the checks of a single run: sbatch --test-only refuses
#    the entry whose partition the cluster lacks (one line, no job, no run directory) and the
#    queue goes on with the next, which runs as a job.
cat >"$tmp/queue.json" <<EOF
{"entries": [
  {"spec": {"task": "fmnist-mlp", "dataset_size": 640, "epochs": 1, "batch_size": 16,
            "launcher": "slurm", "slurm_nodes": 1, "slurm_tasks_per_node": 2,
            "slurm_partition": "nosuchpartition", "system_interval": 0}},
  {"spec": {"task": "fmnist-mlp", "dataset_size": 640, "epochs": 1, "batch_size": 16,
            "launcher": "slurm", "slurm_nodes": 1, "slurm_tasks_per_node": 2,
            "system_interval": 0}}]}
EOF
rm -rf "$runs"
timeout 120 "$ddpdesk" --headless --queue "$tmp/queue.json" >"$tmp/queue.out" 2>"$tmp/queue.err"
rc=$?
[ "$rc" -eq 1 ] || { bad "queue: exit $rc, expected 1 (one entry failed)"; tail -n 20 "$tmp/queue.err"; }
/usr/bin/python3 - "$tmp/queue.json" <<'EOF' || bad "queue: entries not as expected: $(cat "$tmp/queue.json")"
import json, os, sys
e = json.load(open(sys.argv[1]))["entries"]
# sbatch --test-only's words ("sbatch: allocation failure: ..."), not a submission's
want = "could not start: sbatch: allocation failure: Invalid partition name specified"
assert e[0]["state"] == "failed" and e[0]["reason"] == want, e[0]
assert not e[0].get("run_dir") or not os.path.exists(e[0]["run_dir"]), e[0]
assert e[1]["state"] == "finished", e[1]
EOF
[ "$(ls "$runs" | wc -l)" -eq 1 ] ||
  bad "queue: run directories: $(ls "$runs")"
grep -q "queue: run 1 could not start: sbatch: allocation failure: Invalid partition" "$tmp/queue.err" ||
  bad "queue: no line for the refused entry: $(cat "$tmp/queue.err")"
# The started entry is named by its job (a Slurm entry has no pids here).
qdir=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["entries"][1]["run_dir"])' "$tmp/queue.json")
qjob=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_id"])' "$qdir/slurm.json" 2>/dev/null)
grep -q "^ddpdesk: queue: run 2/2 (.*) started in $qdir, job $qjob$" "$tmp/queue.err" ||
  bad "queue: no 'started in $qdir, job $qjob' line: $(grep "run 2/2" "$tmp/queue.err")"
no_rank_left "after the queue"
echo "queue: $(grep -m1 "Invalid partition" "$tmp/queue.err")"
rm -rf "$runs"

# 6. Bad input: one line, exit 2, no run directory.
bad_input() {  # name expected-text command...
  local name=$1 want=$2; shift 2
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/$name.err")
  [ "$rc" -eq 2 ] || bad "$name: exit $rc, expected 2"
  grep -q -- "$want" "$tmp/$name.err" || bad "$name: no '$want' in: $(cat "$tmp/$name.err")"
  [ "$lines" -eq 1 ] || bad "$name: $lines lines of errors: $(cat "$tmp/$name.err")"
  [ ! -e "$tmp/$name" ] || bad "$name: the run directory was left behind"
  [ -z "$(ls -A "$runs" 2>/dev/null)" ] || bad "$name: a run directory appeared under runs/"
  echo "ok $name: $(tail -n 1 "$tmp/$name.err")"
}
bad_input no-sbatch "sbatch could not be run" env PATH=/nonexistent "$ddpdesk" --headless "${spec[@]}" \
  "${slurm[@]}" --run-dir "$tmp/no-sbatch"
bad_input bad-partition "partition" "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" \
  --slurm-partition nosuchpartition --run-dir "$tmp/bad-partition"
bad_input bad-time "invalid --slurm-time '1:2:3:4'" "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" \
  --slurm-time 1:2:3:4 --run-dir "$tmp/bad-time"
no_rank_left "at the end"
[ -z "$(squeue -h 2>/dev/null)" ] || bad "jobs left in the queue: $(squeue -h)"
exit $fail
