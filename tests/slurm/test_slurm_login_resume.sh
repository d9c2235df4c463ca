#!/usr/bin/env bash
# Under a private Slurm (with_slurm.sh) and a private sshd (with_sshd.sh), this host standing in
# for the cluster's login node, as in test_slurm_login.sh:
# 1. A stop that comes before the job's srun step exists (an srun first on the job's PATH holds
#    the step until the stop file appears, as a slow prolog would) reaches the ranks through the
#    stop file ddpdesk writes into the run directory on the cluster over ssh: they start, find
#    it, stop at their first step boundary with a checkpoint. (Without the file the signal finds
#    no step and the ranks train to the end.)
# 2. `ddpdesk --headless --resume ssh://root@127.0.0.1:PORT/<that directory>`, with no local
#    record of it, submits a new job through that host from the checkpoint there; its last
#    parameters are bitwise those of an uninterrupted local run, and a new local record keeps it.
# 3. Directories that were not a Slurm run through a login node (none, no spec.json, a local
#    run, a Slurm run submitted on the cluster itself) are refused in one line with exit 2,
#    headless and in the window, nothing made on either side and no ssh left.
#   with_slurm.sh with_sshd.sh tests/slurm/test_slurm_login_resume.sh WORKER DDPDESK
. "$(dirname "$0")/slurm_run_common.sh" slurm-login-resume "$@"
login=root@127.0.0.1:$DDPDESK_SSH_PORT
url=ssh://$login
export_env="--export=ALL,OMP_NUM_THREADS=1,DDPDESK_DEBUG_STEPS=1"
no_ssh_left() {
  for _ in $(seq 30); do pgrep -f "$tmp/" >/dev/null || break; sleep 0.1; done
  if pgrep -f "$tmp/" >/dev/null; then bad "$1: processes left: $(pgrep -af "$tmp/" | head -3)"; fi
  if pgrep -f "ssh -F $DDPDESK_SSH_DIR" >/dev/null; then bad "$1: ssh left: $(pgrep -af 'ssh -F')"; fi
}

reference_run

# 1. Stopped before the step exists.
t0=$SECONDS
remote=$tmp/cluster/run
mkdir -p "$tmp/bin"
cat >"$tmp/bin/srun" <<EOF
#!/bin/bash
touch "$tmp/in-srun"
for _ in \$(seq 300); do [ -e "\$DDPDESK_STOP_FILE" ] && break; sleep 0.05; done
PATH='$PATH' exec srun "\$@"
EOF
chmod +x "$tmp/bin/srun"
timeout --foreground 120 "$ddpdesk" --headless "${spec[@]}" "${slurm[@]}" --slurm-login "$login" \
  --slurm-remote-dir "$remote" --slurm-extra "$export_env,PATH=$tmp/bin:$PATH" \
  >"$tmp/first.out" 2>"$tmp/first.err" &
dd_pid=$!
for _ in $(seq 1200); do [ -e "$tmp/in-srun" ] && break; kill -0 "$dd_pid" 2>/dev/null || break; sleep 0.05; done
[ -e "$tmp/in-srun" ] || { bad "the job's batch shell never reached srun"; cat "$tmp/first.err"; }
kill -INT "$dd_pid"
wait "$dd_pid"
rc=$?
dd_pid=
[ "$rc" -eq 130 ] || { bad "stopped run exited $rc, expected 130"; tail -n 20 "$tmp/first.err"; }
[ -e "$remote/stop-requested" ] || bad "no stop file in the run directory on the cluster"
for r in 0 1; do
  grep -q '"outcome": *"stopped"' "$remote/rank-$r.exit.json" 2>/dev/null ||
    bad "rank $r did not stop: $(cat "$remote/rank-$r.exit.json" 2>/dev/null)"
done
ls "$remote"/checkpoints/step-*.pt >/dev/null 2>&1 || bad "no checkpoint on the cluster after the stop"
stopped_at=$(steps "$remote/metrics/rank-0.jsonl" | tail -n 1 | cut -d' ' -f1)
[ "${stopped_at:-50}" -lt 50 ] || bad "the ranks trained to step ${stopped_at:-?}: the stop did not reach them"
no_ssh_left "after the stop"
echo "ok 1: stopped before the step existed, ranks stopped at step $stopped_at ($((SECONDS - t0)) s)"

# 2. Resumed from the directory on the cluster alone: the local record is gone.
t0=$SECONDS
rm -rf "$runs"
timeout 120 "$ddpdesk" --headless --resume "$url$remote" --slurm-extra "$export_env" \
  >"$tmp/second.out" 2>"$tmp/second.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "resumed run exited $rc"; tail -n 20 "$tmp/second.err"; }
[ ! -e "$remote/stop-requested" ] || bad "the earlier job's stop file was left for the new job"
first=$(steps "$remote/metrics/rank-0.jsonl" | head -n 1 | cut -d' ' -f1)
last=$(steps "$remote/metrics/rank-0.jsonl" | tail -n 1)
[ "$first" = "$((stopped_at + 1))" ] || bad "the resumed job began at step $first, not $((stopped_at + 1))"
[ "$last" = "$reference" ] || bad "the resumed run ended at '$last', the uninterrupted one at '$reference'"
grep -q "^finished after .*: 50 steps" "$tmp/second.out" || bad "no 'finished … 50 steps' summary: $(cat "$tmp/second.out")"
record=$(ls -d "$runs"/*/ 2>/dev/null | head -n 1)
record=${record%/}
[ "$(ls "$runs" 2>/dev/null | wc -l)" -eq 1 ] || bad "not one new local record: $(ls "$runs" 2>/dev/null)"
[ "$(json_field "$record/slurm.json" remote_dir)" = "$remote" ] || bad "the new record's slurm.json does not name $remote"
[ "$(json_field "$record/spec.json" slurm_login)" = "$login" ] || bad "the new record's spec.json does not name $login"
grep -q -- "--resume $remote$" "$remote/job.sbatch" || bad "the job does not resume from $remote: $(tail -n 1 "$remote/job.sbatch")"
no_ssh_left "after the resume"
echo "ok 2: resumed from $url$remote: steps $first.. end bitwise at '$last' ($((SECONDS - t0)) s)"

# 3. Not a login-node Slurm run: one line, exit 2, nothing made.
mkdir -p "$tmp/cluster/empty" "$tmp/cluster/local-run" "$tmp/cluster/cluster-run"
echo '{"task": "seed", "launcher": "local"}' >"$tmp/cluster/local-run/spec.json"
echo '{"task": "seed", "launcher": "slurm"}' >"$tmp/cluster/cluster-run/spec.json"
rm -rf "$runs"
refused() {  # name, expected text, then how ddpdesk runs (--headless or not)
  local name=$1 want=$2; shift 2
  local before
  before=$(find "$tmp/cluster" | sort)
  # The window's Qt warns on stderr when XDG_RUNTIME_DIR is unset (as under CI): give it one.
  mkdir -p "$tmp/xdg" && chmod 700 "$tmp/xdg"
  XDG_RUNTIME_DIR=$tmp/xdg QT_QPA_PLATFORM=offscreen timeout 60 "$ddpdesk" "$@" --resume "$url$tmp/cluster/$name" \
    >"$tmp/$name.out" 2>"$tmp/$name.err"
  local rc=$?
  [ "$rc" -eq 2 ] || bad "$name: exit $rc, expected 2"
  grep -q -- "cannot resume $url$tmp/cluster/$name: $want" "$tmp/$name.err" ||
    bad "$name: no 'cannot resume …: $want' in: $(cat "$tmp/$name.err")"
  [ "$(wc -l <"$tmp/$name.err")" -eq 1 ] || bad "$name: not one line: $(cat "$tmp/$name.err")"
  [ "$(find "$tmp/cluster" | sort)" = "$before" ] || bad "$name: something was made on the cluster"
  [ -z "$(ls -A "$runs" 2>/dev/null)" ] || bad "$name: a local record was made: $(ls "$runs")"
  no_ssh_left "$name"
  echo "ok $name: $(cat "$tmp/$name.err")"
}
refused missing "no such directory there" --headless
refused empty "no spec.json there" --headless
refused local-run "it holds a run of launcher 'local'" --headless
refused cluster-run "it holds a Slurm run submitted on the cluster itself" --headless
refused local-run "it holds a run of launcher 'local'"  # the window's command line
[ -z "$(squeue -h 2>/dev/null)" ] || bad "jobs left in the queue: $(squeue -h)"
[ "$fail" -eq 0 ] && echo "ok: login-node Slurm runs stopped before their step and resumed over ssh"
exit $fail
