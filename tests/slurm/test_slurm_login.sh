#!/usr/bin/env bash
# Under a private Slurm (with_slurm.sh) and a private sshd on loopback (with_sshd.sh) at once, the
# sshd's host standing in for the cluster's login node: `ddpdesk --headless --launcher slurm
# --slurm-login root@127.0.0.1:PORT` writes the batch script into a run directory on the
# "cluster" over ssh and submits it there, follows the two CPU ranks live through ssh, stops the
# job gracefully (Ctrl+C: scancel --signal=TERM over ssh, a checkpoint), resumes it from the local
# record as a new job (its last parameters bitwise those of an uninterrupted local run), names a
# dying rank with its node and output tail, and refuses a refused key, a closed port, a login
# node without sbatch, a partition the cluster lacks (sbatch --test-only over ssh, before anything
# is written there) and a malformed login in one line with exit 2, nothing left on either side,
# no ssh left running. Shared set-up: slurm_run_common.sh.
#   with_slurm.sh with_sshd.sh tests/slurm/test_slurm_login.sh WORKER DDPDESK
. "$(dirname "$0")/slurm_run_common.sh" slurm-login "$@"
export TMPDIR=$tmp/local-tmp
mkdir -p "$TMPDIR"  # the mirror's temporary directory: checked below
login=root@127.0.0.1:$DDPDESK_SSH_PORT
# The job's environment is the login session's, not ours: what the ranks need goes with sbatch.
export_env="--export=ALL,OMP_NUM_THREADS=1,DDPDESK_DEBUG_STEPS=1"

nothing_left() {  # no rank, no ssh of ours, no mirror directory
  # The remote follow loop on the login node (this host) ends at its next write after ssh went.
  for _ in $(seq 30); do pgrep -f "$tmp/" >/dev/null || break; sleep 0.1; done
  if pgrep -f "$tmp/" >/dev/null; then bad "$1: processes left: $(pgrep -af "$tmp/" | head -3)"; fi
  if pgrep -f "ssh -F $DDPDESK_SSH_DIR" >/dev/null; then bad "$1: ssh left: $(pgrep -af 'ssh -F')"; fi
  [ -z "$(ls -A "$TMPDIR")" ] || bad "$1: left $(ls -A "$TMPDIR") in the temporary directory"
}

reference_run

# 1. Submitted through the login node, watched live through ssh, stopped gracefully. Rank 0 is
#    slowed (150 ms per micro-step) so the stop lands mid-run, also while other tests load the
#    machine (at 40 ms a loaded machine's ssh round trips let the job finish first).
t0=$SECONDS
remote=$tmp/cluster/run  # a path on the "cluster" (this machine, reached over ssh)
timeout --foreground 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" --slurm-login "$login" --slurm-remote-dir "$remote" \
  --slurm-extra "$export_env,DDPDESK_FAULT_SLOW_RANK=0:150" >"$tmp/first.out" 2>"$tmp/first.err" &
dd_pid=$!  # --foreground: timeout passes our SIGINT on to ddpdesk alone, as a terminal's Ctrl+C
live=0 record=
for _ in $(seq 600); do
  record=$(ls -d "$runs"/*/ 2>/dev/null | head -n 1)
  if [ -n "$record" ] && [ "$(steps "$record/metrics.jsonl" | wc -l)" -ge 5 ]; then
    # Steps came to the local monitor while Slurm still calls the job running.
    job=$(json_field "$record/slurm.json" job_id)
    [ "$(squeue -h -j "$job" -o %T 2>/dev/null)" = RUNNING ] && live=1
    break
  fi
  kill -0 "$dd_pid" 2>/dev/null || break
  sleep 0.1
done
record=${record%/}
[ "$live" -eq 1 ] || { bad "no steps reached the monitor while the job was running"; cat "$tmp/first.err"; }
kill -INT "$dd_pid"
wait "$dd_pid"
rc=$?
dd_pid=
[ "$rc" -eq 130 ] || { bad "stopped run exited $rc, expected 130"; tail -n 20 "$tmp/first.err"; }
# The slowed rank is rightly named a straggler; nothing else may go wrong (a lost connection, a
# failed scancel: a terminal's Ctrl+C must not reach the ssh connections).
grep "warning" "$tmp/first.err" | grep -v "straggler" && bad "warnings during the stop"
grep -q "stopped by the user at step " "$tmp/first.err" || bad "no 'stopped by the user' line"
grep -q "^#SBATCH --ntasks-per-node=2" "$remote/job.sbatch" || bad "no job.sbatch with --ntasks-per-node=2 on the cluster"
grep -q "job $job submitted: batch script $login:$remote/job.sbatch" "$tmp/first.err" ||
  bad "no 'job $job submitted: batch script $login:…' line: $(cat "$tmp/first.err")"
grep -q "job $job running on " "$tmp/first.err" || bad "no 'job $job running on' line"
grep -q '"state": "Stopped"' "$record/status.json" || bad "the record's status.json is not Stopped"
[ "$(json_field "$record/spec.json" slurm_remote_dir)" = "$remote" ] || bad "the record's spec.json does not name $remote"
[ "$(json_field "$record/slurm.json" remote_dir)" = "$remote" ] || bad "slurm.json does not name $remote"
ls "$remote"/checkpoints/step-*.pt >/dev/null 2>&1 || bad "no checkpoint on the cluster after the stop"
# The record is the monitor's alone: nothing of the job's is written here.
for f in checkpoints metrics job.sbatch rank-0.log rank-0.exit.json; do
  [ ! -e "$record/$f" ] || bad "the local record holds the job's $f"
done
for r in 0 1; do
  grep -q '"outcome": *"stopped"' "$remote/rank-$r.exit.json" 2>/dev/null ||
    bad "rank $r did not exit as stopped: $(cat "$remote/rank-$r.exit.json" 2>/dev/null)"
done
stopped_at=$(steps "$remote/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)
[ "${stopped_at:-50}" -lt 50 ] || bad "the stop came after the last step ($stopped_at)"
[ "$(steps "$record/metrics.jsonl" | tail -n 1 | cut -d' ' -f1)" = "$stopped_at" ] ||
  { bad "the monitor saw up to step $(steps "$record/metrics.jsonl" | tail -n 1), the rank wrote $stopped_at"; cat "$tmp/first.err" "$record/monitor.log"; }
nothing_left "after the stop"
echo "ok 1: job $job submitted over ssh, followed live, stopped at step $stopped_at ($((SECONDS - t0)) s)"

# 2. Resumed from the local record: a new job from the checkpoint on the cluster (the slowing
#    left out of the job's environment: a flag given with --resume changes just that field).
t0=$SECONDS
timeout 120 "$ddpdesk" --headless --resume "$record" --slurm-extra "$export_env" \
  >"$tmp/second.out" 2>"$tmp/second.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "resumed run exited $rc"; tail -n 20 "$tmp/second.err"; }
jobs=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["job_id"], *d["earlier_jobs"])' "$record/slurm.json")
[ "${jobs% *}" != "$job" ] && [ "${jobs#* }" = "$job" ] || bad "slurm.json does not name a new job after $job: $jobs"
first=$(steps "$remote/metrics/rank-0.jsonl" | head -n 1 | cut -d' ' -f1)
last=$(steps "$remote/metrics/rank-0.jsonl" | tail -n 1)
[ "$first" = "$((stopped_at + 1))" ] || bad "the resumed job began at step $first, not $((stopped_at + 1))"
[ "$last" = "$reference" ] || bad "the resumed run ended at '$last', the uninterrupted one at '$reference'"
ls -d "$remote"/metrics-before-* >/dev/null 2>&1 || bad "the first job's metrics were not moved aside"
# ... and its rank output (else the new job's Log tab would replay it).
ls "$remote"/logs-before-*/rank-0.log >/dev/null 2>&1 || bad "the first job's rank-0.log was not moved aside"
grep -q "^finished after .*: 50 steps" "$tmp/second.out" || bad "no 'finished … 50 steps' summary: $(cat "$tmp/second.out")"
[ "$(ls "$runs" | wc -l)" -eq 1 ] || bad "the resume made another record: $(ls "$runs")"
grep -q '"state": "Finished"' "$record/status.json" || bad "the record's status.json is not Finished"
nothing_left "after the resume"
echo "ok 2: resumed as job ${jobs% *}: steps $first.. end bitwise at '$last' ($((SECONDS - t0)) s)"

# 2b. A rank dies (SIGKILL while writing step 3's checkpoint): failed, the rank named with its
#     node and the last lines of its output, fetched from the cluster through the ssh mirror.
t0=$SECONDS
timeout --foreground 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" --slurm-login "$login" \
  --slurm-remote-dir "$tmp/cluster/dies" --checkpoint-every 3 \
  --slurm-extra "$export_env,DDPDESK_FAULT_KILL_IN_CHECKPOINT=3" >"$tmp/dies.out" 2>"$tmp/dies.err"
rc=$?
[ "$rc" -eq 1 ] || { bad "the run whose rank died exited $rc, expected 1"; tail -n 20 "$tmp/dies.err"; }
# Without srun's own report (its slurm-N.out stays on the cluster) the rank named is the one that
# reported the error, rank 1 (rank 0 died without a word): named with its node and its tail.
grep -q "run failed: rank [01] on " "$tmp/dies.err" || { bad "no rank and node named"; tail -n 20 "$tmp/dies.err"; }
grep -q "last lines of rank [01]'s output ($tmp/cluster/dies/rank-[01].log)" "$tmp/dies.err" ||
  { bad "no output tail from the cluster"; tail -n 20 "$tmp/dies.err"; }
grep -q "^  ddpdesk-worker\[[01]\]" "$tmp/dies.err" || bad "the tail holds none of the rank's lines"
nothing_left "after the rank died"
echo "ok 2b: $(grep -m1 "run failed" "$tmp/dies.err") ($((SECONDS - t0)) s)"

# 3. Bad input: one line, exit 2, nothing on the cluster, no record, no ssh left.
closed=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -rf "$runs"
bad_input() {  # name, expected text, ssh command, login, extra flags...
  local name=$1 want=$2 cmd=$3 at=$4; shift 4
  local t=$SECONDS
  DDPDESK_SSH_COMMAND=$cmd timeout 60 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" "--slurm-login=$at" \
    --slurm-remote-dir "$tmp/cluster/$name" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local rc=$?
  [ "$rc" -eq 2 ] || bad "$name: exit $rc, expected 2"
  grep -q -- "$want" "$tmp/$name.err" || bad "$name: no '$want' in: $(cat "$tmp/$name.err")"
  [ "$(wc -l <"$tmp/$name.err")" -eq 1 ] || bad "$name: not one line: $(cat "$tmp/$name.err")"
  [ ! -e "$tmp/cluster/$name" ] || bad "$name: the run directory on the cluster was left behind"
  [ -z "$(ls -A "$runs" 2>/dev/null)" ] || bad "$name: a local record was left: $(ls "$runs")"
  nothing_left "$name"
  echo "ok $name ($((SECONDS - t)) s): $(tail -n 1 "$tmp/$name.err")"
}
bad_input refused-key "Permission denied" "$DDPDESK_SSH_REFUSED" "$login"
bad_input closed-port "Connection refused" "$DDPDESK_SSH_COMMAND" "root@127.0.0.1:$closed"
bad_input no-sbatch "sbatch: not found on the login node" "$DDPDESK_SSH_BARE" "$login"
# A partition the cluster lacks is refused by `sbatch --test-only` on the login node before
# anything is made there: every ssh command ddpdesk runs is logged, and none but that one ran.
cat >"$tmp/ssh-logged" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$tmp/ssh.log"
exec $DDPDESK_SSH_COMMAND "\$@"
EOF
chmod +x "$tmp/ssh-logged"
bad_input bad-partition "sbatch: .*Invalid partition name" "$tmp/ssh-logged" "$login" --slurm-partition nosuchpartition
grep -q -- "--test-only" "$tmp/ssh.log" || bad "bad-partition: no sbatch --test-only over ssh: $(cat "$tmp/ssh.log")"
[ "$(wc -l <"$tmp/ssh.log")" -eq 1 ] || bad "bad-partition: ssh ran more than the check: $(cat "$tmp/ssh.log")"
bad_input bad-login "invalid --slurm-login '-oProxyCommand=x'" "$DDPDESK_SSH_COMMAND" "-oProxyCommand=x"
[ -z "$(squeue -h 2>/dev/null)" ] || bad "jobs left in the queue: $(squeue -h)"
[ "$fail" -eq 0 ] && echo "ok: a Slurm run through a login node over ssh"
exit $fail
