#!/usr/bin/env bash
# Under a real Slurm (started by with_slurm.sh): an out-of-memory in a `--launcher slurm` run,
# made by the test-only fault DDPDESK_FAULT_OOM_ABOVE (docs/environment.md).
# 1. Rank 1 runs out of memory from step 7 (a checkpoint every 4 steps, --slurm-requeue: Slurm's
#    restarts, since ddpdesk's own --max-restarts is refused for a Slurm run, exit 2): ddpdesk
#    exits 1 naming rank 1's out-of-memory (its node, srun's "exit code 3", the worker's line) as
#    the run's cause, not rank 0's failure that follows; rank 1's exit record says exit 3 and the
#    step-6 checkpoint it wrote itself; status.json is Failed with that cause and no restart;
#    Slurm does not requeue the failed job; no rank is left, no job queued.
# 2. With --fit-batch and rank 1 short of memory from step 1 (5:1), the job fits 4 × 8 and
#    finishes with exit 0, headless's summary saying the fit.
# 3. `--resume` of run 1 with --fit-batch, still short of memory: a new job in the same directory
#    resumes from step 6's checkpoint, fits 8 × 4 and finishes the run with exit 0.
#   with_slurm.sh tests/slurm/test_slurm_oom.sh WORKER DDPDESK
. "$(dirname "$0")/slurm_run_common.sh" slurm-oom "$@"

failures=0
bad() { echo "FAIL: $*"; fail=1; failures=$((failures + 1)); }
no_rank_left() {  # no worker of this test's runs is alive
  if pgrep -f "$tmp/" >/dev/null; then bad "$1: processes left: $(pgrep -af "$tmp/" | head -3)"; fi
}
show() {  # name [run dir]: what ddpdesk and the run directory said, after a failed assertion
  local d=${2:-$tmp/$1}
  echo "--- $1: headless stderr (last 20 lines)"; tail -n 20 "$tmp/$1.err"
  echo "--- $1: headless stdout (last 10 lines)"; tail -n 10 "$tmp/$1.out"
  echo "--- $1: monitor.log (last 15 lines)"; tail -n 15 "$d/monitor.log" 2>/dev/null
  echo "--- $1: status.json"; cat "$d/status.json" 2>/dev/null; echo
  for r in 0 1; do echo "--- $1: rank-$r.exit.json"; cat "$d/rank-$r.exit.json" 2>/dev/null; echo; done
  for f in "$d"/slurm-*.out; do echo "--- $1: $f"; cat "$f" 2>/dev/null; done
}
job_of() { json_field "$1/slurm.json" job_id; }
queue_empty() {  # name: no job left in the queue within 10 s of ddpdesk's exit
  for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && return 0; sleep 0.1; done
  bad "$1: jobs left in the queue: $(squeue -h)"
}
short=("${spec[@]/#3200/640}")  # 10 steps of 2 × 16 × 2 samples
node=$(hostname -s)
t0=$SECONDS

# 0. ddpdesk restarts local runs only: --max-restarts with the Slurm launcher is bad input.
"$ddpdesk" --headless "${short[@]}" "${slurm[@]}" --max-restarts 2 --checkpoint-every 4 \
  --run-dir "$tmp/maxr" >"$tmp/maxr.out" 2>"$tmp/maxr.err"
rc=$?
[ "$rc" -eq 2 ] || bad "--max-restarts 2 with --launcher slurm: exit $rc, expected 2"
grep -q "invalid --max-restarts '2': must be 0 for a Slurm run" "$tmp/maxr.err" ||
  bad "--max-restarts with slurm: $(cat "$tmp/maxr.err")"
[ "$(wc -l <"$tmp/maxr.err")" -eq 1 ] || bad "--max-restarts with slurm: not one line: $(cat "$tmp/maxr.err")"
[ ! -e "$tmp/maxr" ] || bad "--max-restarts with slurm: a run directory was left"
echo "--max-restarts refused: $(cat "$tmp/maxr.err")"

# 1. Rank 1 out of memory from step 7: failed, the cause named, step 6's checkpoint, no requeue.
run=$tmp/oom
DDPDESK_FAULT_OOM_ABOVE=8:1:7 timeout 120 "$ddpdesk" --headless "${short[@]}" "${slurm[@]}" \
  --slurm-requeue --checkpoint-every 4 --run-dir "$run" >"$tmp/oom.out" 2>"$tmp/oom.err"
rc=$?
failures_before=$failures
[ "$rc" -eq 1 ] || bad "oom: headless exited $rc, expected 1 (a failed run)"
job=$(job_of "$run")
line="out of memory on rank 1 in a micro-batch of 16 samples (step 7); checkpoint of step 6 written; try --fit-batch or a smaller --batch-size"
grep -q "run failed: rank 1 on $node: .*exit code 3.*: $line" "$tmp/oom.err" ||
  bad "oom: headless did not name rank 1's out-of-memory (exit code 3) as the cause"
grep -q "run failed: rank 0" "$tmp/oom.err" && bad "oom: rank 0 named as the cause"
[ -s "$run/checkpoints/step-00000006.pt" ] ||
  bad "oom: no checkpoint of step 6: $(ls "$run/checkpoints" 2>&1)"
[ "$(json_field "$run/status.json" state)" = Failed ] || bad "oom: status.json is not Failed"
case $(json_field "$run/status.json" reason) in
  *"$line"*) ;;
  *) bad "oom: status.json's reason is not the out-of-memory" ;;
esac
[ "$(json_field "$run/status.json" restarts)" = 0 ] || bad "oom: status.json counts a restart"
code1=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_codes"][1])' "$run/status.json")
[ "$code1" = 3 ] || bad "oom: status.json gives rank 1 exit code $code1, not its own 3"
[ "$(json_field "$run/rank-1.exit.json" exit_code)" = 3 ] || bad "oom: rank 1's exit record has no exit code 3"
[ "$(json_field "$run/rank-1.exit.json" checkpoint)" = "$run/checkpoints/step-00000006.pt" ] ||
  bad "oom: rank 1's exit record does not name step 6's checkpoint"
[ "$(steps "$run/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)" = 6 ] ||
  bad "oom: rank 0's last step is not 6: $(steps "$run/metrics/rank-0.jsonl" | tail -n 1)"
grep -q "job $job ended: FAILED" "$run/monitor.log" || bad "oom: job $job did not end FAILED"
grep -q "requeued" "$run/monitor.log" && bad "oom: Slurm requeued the job"
grep -q "restart [0-9]" "$tmp/oom.err" && bad "oom: headless said a restart"
grep -q "^#SBATCH --requeue$" "$run/job.sbatch" || bad "oom: no --requeue in job.sbatch"
[ "$failures" -eq "$failures_before" ] || show oom
queue_empty oom
no_rank_left "after the out-of-memory"
echo "oom (job $job, $((SECONDS - t0)) s): $(grep -m1 "run failed" "$tmp/oom.err")"
echo "oom: Slurm's end: $(grep -m1 "job $job ended" "$run/monitor.log" | cut -d' ' -f2-)"
echo "oom: srun said: $(grep "^srun: error: " "$run/slurm-$job.out" | tr '\n' '|')"

# 2. --fit-batch, rank 1 short of memory from the start: 4 × 8 fits, the run finishes.
t1=$SECONDS
run=$tmp/fit
DDPDESK_FAULT_OOM_ABOVE=5:1 timeout 120 "$ddpdesk" --headless "${short[@]}" "${slurm[@]}" \
  --fit-batch --run-dir "$run" >"$tmp/fit.out" 2>"$tmp/fit.err"
rc=$?
failures_before=$failures
[ "$rc" -eq 0 ] || bad "fit: headless exited $rc, expected 0"
grep -q "^started: micro-batch 4 × 8 accumulation steps fits (asked 16 × 2)$" "$tmp/fit.out" ||
  bad "fit: the summary does not say 'micro-batch 4 × 8 accumulation steps fits'"
grep -q "ddpdesk-worker\[0\] micro-batch 4 × 8 accumulation steps fits" "$run/rank-0.log" ||
  bad "fit: rank 0's output does not say the fit"
[ "$(json_field "$run/status.json" state)" = Finished ] || bad "fit: status.json is not Finished"
[ "$(steps "$run/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)" = 10 ] || bad "fit: the last step is not 10"
[ "$failures" -eq "$failures_before" ] || show fit
queue_empty fit
no_rank_left "after the fitted run"
echo "fit (job $(job_of "$run"), $((SECONDS - t1)) s): $(grep "^started:" "$tmp/fit.out")"

# 3. Run 1 resumed with --fit-batch, still short of memory: a new job, 8 × 4, finished.
t1=$SECONDS
run=$tmp/oom
DDPDESK_FAULT_OOM_ABOVE=8:1:7 timeout 120 "$ddpdesk" --headless --resume "$run" --fit-batch \
  >"$tmp/resume.out" 2>"$tmp/resume.err"
rc=$?
failures_before=$failures
[ "$rc" -eq 0 ] || bad "resume: headless exited $rc, expected 0"
jobs=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["job_id"], *d["earlier_jobs"])' "$run/slurm.json" 2>/dev/null)
[ "${jobs% *}" != "$job" ] && [ "${jobs#* }" = "$job" ] ||
  bad "resume: slurm.json does not name a new job after $job: $jobs"
grep -q "^started: resumed from $run/checkpoints/step-00000006.pt; micro-batch 8 × 4 accumulation steps fits (asked 16 × 2)$" "$tmp/resume.out" ||
  bad "resume: the summary does not say 'resumed from' step 6's checkpoint and 'micro-batch 8 × 4 accumulation steps fits'"
[ "$(json_field "$run/status.json" state)" = Finished ] || bad "resume: status.json is not Finished"
[ "$(steps "$run/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)" = 10 ] || bad "resume: the last step is not 10"
# Both attempts' steps in the run's record: 1-6, then 7-10 from the resumed job.
[ "$(steps "$run/metrics.jsonl" | cut -d' ' -f1 | sort -nu | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 9 10 " ] ||
  bad "resume: the record's steps are $(steps "$run/metrics.jsonl" | cut -d' ' -f1 | sort -nu | tr '\n' ' ')"
[ "$failures" -eq "$failures_before" ] || show resume "$run"
queue_empty resume
no_rank_left "after the resume"
echo "resume (job ${jobs% *}, $((SECONDS - t1)) s): $(grep "micro-batch" "$tmp/resume.out" | tail -n 1)"
echo "total $((SECONDS - t0)) s"
exit $fail
