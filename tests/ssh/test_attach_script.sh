#!/usr/bin/env bash
# Under a private sshd (with_sshd.sh): a Python-script run without the client (examples/
# print_only.py on two ranks, `ddpdesk --headless --task python`) followed while it runs by
# `ddpdesk --headless --attach ssh://…/DIR`. No rank file can say such a run ended: the follower
# ends with the status.json the run's own monitor wrote (mirrored over ssh) — exit 0, "finished
# after", every printed step charted — and its summary has each rank's system use, from the
# metrics/system.jsonl that monitor sampled (no pid can be sampled from here).
#   with_sshd.sh tests/ssh/test_attach_script.sh WORKER DDPDESK
set -uo pipefail
source "$(dirname "$0")/common.sh"
script=$(cd "$(dirname "$0")/../../examples" && pwd)/print_only.py

export XDG_DATA_HOME=$tmp/home DDPDESK_WORKER=$worker
timeout 120 "$ddpdesk" --headless --task python --script "$script" --python /usr/bin/python3 \
  --nproc 2 --script-args '--steps 40 --sleep 0.1' >"$tmp/run.out" 2>"$tmp/run.err" &
run=$!; bg+=($!)
# Followed once its ranks started (the directory is there before its spec.json).
dir=
for _ in $(seq 600); do
  dir=$(ls -d "$XDG_DATA_HOME"/ddpdesk/runs/*/ 2>/dev/null | head -n 1)
  [ -n "$dir" ] && [ -f "$dir/rank-0.log" ] && [ -f "$dir/spec.json" ] && break
  sleep 0.1
done
[ -n "$dir" ] || { bad "the run made no directory: $(cat "$tmp/run.err")"; exit 1; }
dir=${dir%/}
timeout 120 "$ddpdesk" --headless --attach "$(url "$dir")" >"$tmp/a.out" 2>"$tmp/a.err" &
attach=$!; bg+=($!)
wait "$run"; rc=$?
[ "$rc" -eq 0 ] || bad "the run exited $rc: $(cat "$tmp/run.err")"
wait "$attach"; arc=$?
[ "$arc" -eq 0 ] || bad "the ssh attach exited $arc (want 0): $(cat "$tmp/a.out" "$tmp/a.err")"
grep -q "^finished after .*: 40 steps," "$tmp/a.out" ||
  bad "the ssh attach did not end Finished with 40 steps: $(cat "$tmp/a.out" "$tmp/a.err")"
# "system use per rank:", then "rank  peak RSS  mean CPU %", then a row for each rank.
for r in 0 1; do
  sed -n '/^system use per rank:/,/^$/p' "$tmp/a.out" | grep -Eq "^$r +[0-9.]+ [KMG]iB" ||
    bad "no system use of rank $r in the ssh attach's summary: $(cat "$tmp/a.out")"
done
no_ssh_left "script run"
[ "$fail" -eq 0 ] && echo "ok: a script run without the client followed over ssh ends Finished, with its ranks' system use"
exit $fail
