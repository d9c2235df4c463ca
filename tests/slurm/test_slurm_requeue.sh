#!/usr/bin/env bash
# Under a real Slurm (started by with_slurm.sh): a `--launcher slurm --slurm-requeue` run that
# Slurm requeues once its ranks stepped past a checkpoint (`scontrol requeue`, what a node failure
# does to a --requeue job) is followed as the same run: the monitor says "job N requeued
# (restart 1)", the requeued job's ranks resume from the run's newest checkpoint and the run
# finishes with exit 0, every step's last recorded loss bitwise that of an uninterrupted local
# run, status.json counting 1 restart, the batch output of both attempts kept. Without
# --slurm-requeue the job is --no-requeue: Slurm refuses `scontrol requeue` and the run goes on
# to its end as before. A requeued job that then fails for real (Slurm says FAILED with the grown
# restart count, which it never says of a job on its way back to the queue) fails the run within
# seconds, also when the monitor saw nothing of the requeue.
#   with_slurm.sh tests/slurm/test_slurm_requeue.sh WORKER DDPDESK
. "$(dirname "$0")/slurm_run_common.sh" slurm-requeue "$@"

no_rank_left() {  # no worker of this test's runs is alive
  if pgrep -f "$tmp/" >/dev/null; then bad "$1: processes left: $(pgrep -af "$tmp/" | head -3)"; fi
}
job_of() { json_field "$1/slurm.json" job_id; }
running() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ]; }

reference_run

# 1. Requeued after step 8 (a checkpoint every 4 steps; rank 0 slowed, 60 ms per micro-step, so
#    the requeue lands mid-run). Slurm holds a requeued job until its BeginTime (some minutes
#    later); the test lets it start at once.
run=$tmp/requeue
DDPDESK_FAULT_SLOW_RANK=0:60 timeout 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" \
  --slurm-requeue --checkpoint-every 4 --run-dir "$run" >"$tmp/requeue.out" 2>"$tmp/requeue.err" &
dd_pid=$!
past_checkpoint() {
  [ "$(steps "$run/metrics/rank-0.jsonl" | wc -l)" -ge 8 ] && ls "$run"/checkpoints/step-*.pt >/dev/null 2>&1
}
for _ in $(seq 1200); do past_checkpoint && break; kill -0 "$dd_pid" 2>/dev/null || break; sleep 0.05; done
job=$(job_of "$run")
requeued_at=$(steps "$run/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)
scontrol requeue "$job" || bad "scontrol requeue $job was refused"
# Once the job is pending again (on a loaded machine that takes slurmctld more than 10 s: an
# update before it has no effect and the job stays held), its begin time is moved to now, again
# every 5 s until it runs — but not within 2 s of the requeue: slurmd refuses to launch a job
# whose new credential was made in the second it revoked the killed attempt's ("Job credential
# revoked", and the job ends FAILED), what Slurm's own delay of a requeued job avoids.
started= moved=-50
for i in $(seq 600); do
  case $(squeue -h -j "$job" -o %T 2>/dev/null) in
    PENDING)
      if [ "$i" -ge 20 ] && [ $((i - moved)) -ge 50 ]; then
        scontrol update JobId="$job" StartTime=now 2>/dev/null
        moved=$i
      fi
      ;;
    RUNNING) started=1; break ;;
  esac
  sleep 0.1
done
[ -n "$started" ] || bad "the requeued job $job did not start again within 60 s"
wait "$dd_pid"
rc=$?
dd_pid=
[ "$rc" -eq 0 ] || { bad "the requeued run exited $rc, expected 0"; tail -n 20 "$tmp/requeue.err" "$run/monitor.log"; }
grep -q "job $job requeued (restart 1)" "$run/monitor.log" ||
  { bad "no 'job $job requeued (restart 1)' in monitor.log"; tail -n 20 "$run/monitor.log"; }
grep -q "restart 1 after step [0-9]*: job $job was requeued by Slurm" "$tmp/requeue.err" ||
  { bad "headless did not say the restart"; cat "$tmp/requeue.err"; }
[ "$(json_field "$run/status.json" restarts)" = 1 ] || bad "status.json restarts is not 1"
[ "$(json_field "$run/status.json" state)" = Finished ] || bad "status.json is not Finished"
grep -q '"event": *"restart"' "$run/metrics.jsonl" || bad "no restart event in the record"
step_losses "$run/metrics.jsonl" >"$tmp/requeue.losses"
cmp -s "$tmp/requeue.losses" "$reference_losses" ||
  { bad "the requeued run's losses differ from the uninterrupted run's";
    diff "$reference_losses" "$tmp/requeue.losses" | head -n 6; }
[ "$(steps "$run/metrics.jsonl" | tail -n 1)" = "$reference" ] || bad "the last parameters differ"
grep -q "DUE TO JOB REQUEUE" "$run/slurm-$job.out" || bad "the first attempt's batch output is gone"
sessions=$(grep -c '"type": *"hello"' "$run/metrics/rank-0.jsonl")
[ "$sessions" -eq 2 ] || bad "rank 0 said hello $sessions time(s), expected 2 (one per attempt)"
no_rank_left "after the requeue"
echo "requeued job $job at step $requeued_at: $(grep -m1 "requeued (restart" "$run/monitor.log" | cut -d' ' -f2-)"

# 2. Without --slurm-requeue: Slurm refuses the requeue, the run finishes as if nothing was asked.
run=$tmp/plain
short=("${spec[@]/#3200/640}")  # 10 steps
DDPDESK_FAULT_SLOW_RANK=0:60 timeout 120 "$ddpdesk" --headless "${short[@]}" "${slurm[@]}" \
  --run-dir "$run" >"$tmp/plain.out" 2>"$tmp/plain.err" &
dd_pid=$!
for _ in $(seq 1200); do
  [ -s "$run/slurm.json" ] && running "$(job_of "$run")" && break
  kill -0 "$dd_pid" 2>/dev/null || break
  sleep 0.05
done
job=$(job_of "$run")
grep -q "^#SBATCH --no-requeue$" "$run/job.sbatch" || bad "no --no-requeue in job.sbatch"
if scontrol requeue "$job" 2>"$tmp/plain.requeue"; then
  bad "Slurm requeued job $job, which was submitted --no-requeue"
fi
grep -q "disabled" "$tmp/plain.requeue" || bad "scontrol said: $(cat "$tmp/plain.requeue")"
wait "$dd_pid"
rc=$?
dd_pid=
[ "$rc" -eq 0 ] || { bad "the run whose requeue was refused exited $rc"; tail -n 20 "$tmp/plain.err"; }
[ "$(json_field "$run/status.json" restarts)" = 0 ] || bad "status.json counts a restart"
grep -q "requeued" "$run/monitor.log" && bad "monitor.log says requeued"
no_rank_left "after the refused requeue"
echo "without --slurm-requeue: $(cat "$tmp/plain.requeue")"
# 3. Requeued, then failing for real: the monitor is frozen (SIGSTOP: a loaded machine, a laptop
#    asleep) from before the requeue until Slurm has ended the new attempt, whose ranks cannot
#    start (their program, a copy of the worker, is gone by then), so no rank says a word. Slurm
#    then says FAILED with the restart count grown (as it never says of a job on its way back to
#    the queue): once running again the monitor reports the run failed within seconds, not
#    "pending" for minutes.
run=$tmp/again
cp "$worker" "$tmp/worker-copy"
DDPDESK_WORKER=$tmp/worker-copy DDPDESK_FAULT_SLOW_RANK=0:60 timeout 120 "$ddpdesk" --headless \
  "${spec[@]}" "${slurm[@]}" \
  --slurm-requeue --checkpoint-every 4 --run-dir "$run" >"$tmp/again.out" 2>"$tmp/again.err" &
dd_pid=$!
for _ in $(seq 1200); do past_checkpoint && break; kill -0 "$dd_pid" 2>/dev/null || break; sleep 0.05; done
job=$(job_of "$run")
monitor=$(pgrep -P "$dd_pid")  # ddpdesk under timeout
kill -STOP "$monitor"
scontrol requeue "$job" || bad "scontrol requeue $job was refused"
ended= moved=-50
for i in $(seq 600); do
  state=$(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*')
  case $state in
    JobState=PENDING)
      rm -f "$tmp/worker-copy"  # the first attempt's ranks are gone
      if [ "$i" -ge 20 ] && [ $((i - moved)) -ge 50 ]; then
        scontrol update JobId="$job" StartTime=now 2>/dev/null
        moved=$i
      fi
      ;;
    JobState=FAILED) ended=1; break ;;
    JobState=COMPLETED | JobState=CANCELLED) break ;;
  esac
  sleep 0.1
done
said=$(scontrol show job "$job" | grep -oE 'JobState=[A-Z_]+|Restarts=[0-9]+|ExitCode=[0-9:]+' | tr '\n' ' ')
[ -n "$ended" ] || bad "the requeued job $job did not fail within 60 s: $said"
kill -CONT "$monitor"
woke=$SECONDS
for _ in $(seq 150); do kill -0 "$dd_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$dd_pid" 2>/dev/null; then
  bad "the monitor did not report the failed job within 15 s: $(tail -n 1 "$run/monitor.log")"
  kill -9 "$monitor"
fi
wait "$dd_pid"
rc=$?
dd_pid=
took=$((SECONDS - woke))
[ "$rc" -ne 0 ] || bad "the run whose requeued job failed exited 0"
[ "$(json_field "$run/status.json" state)" = Failed ] ||
  { bad "status.json is not Failed"; tail -n 5 "$run/monitor.log"; }
grep -q "job $job failed" "$run/monitor.log" ||
  { bad "monitor.log does not say job $job failed"; tail -n 5 "$run/monitor.log"; }
no_rank_left "after the failed requeue"
echo "requeued job $job failed again ($said): the monitor said so ${took} s after it woke"
exit $fail
