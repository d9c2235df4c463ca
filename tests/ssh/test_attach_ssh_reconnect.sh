#!/usr/bin/env bash
# Under a private sshd (with_sshd.sh): a follow over ssh that loses its connection.
#  1. two real ranks followed with `ddpdesk --headless --attach ssh://…`; sshd is killed with its
#     sessions mid-run and started again a few seconds later while the ranks go on writing: one
#     line says the connection is lost, one that it is back, and the summary counts every step
#     of each rank's file exactly once (exit 0);
#  2. with DDPDESK_SSH_RECONNECT_S=3 and sshd gone for good: the follow ends as Failed (exit 1)
#     with "gave up after N attempt(s)", no ssh process or mirror left, and before the default
#     limit (120 s) could have ended it: `timeout 100` would (exit 124).
#   with_sshd.sh tests/ssh/test_attach_ssh_reconnect.sh WORKER DDPDESK
set -uo pipefail
source "$(dirname "$0")/common.sh"

# 1. sshd killed mid-run and started again: every step counted once.
run=$tmp/run1
mkdir -p "$run"
timeout 300 "$ddpdesk" --headless --attach "$(url "$run")" >"$tmp/a1.out" 2>"$tmp/a1.err" &
attach=$!; bg+=($!)
port=$(free_port)
ranks=()
for r in 0 1; do
  # Rank 0's data loading slowed (both ranks wait for it): the run outlasts the outage.
  DDPDESK_FAULT_SLOW_RANK=0:60 RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$worker" --run-dir "$run" --task seed --seed 5 --dataset-size 400 --epochs 3 \
    >"$tmp/rank$r.log" 2>&1 &
  ranks+=($!); bg+=($!)
done
wait_for "step " "$tmp/a1.out" 600 || bad "run 1: no step followed before the outage"
"$DDPDESK_SSHD_CTL" stop
wait_for "lost the connection to .*reconnecting in 1 s (attempt 1" "$tmp/a1.err" 300 ||
  bad "run 1: no 'lost the connection … reconnecting' line: $(cat "$tmp/a1.err")"
before=$(steps_in "$run" 0)
# The ranks write on while nothing follows them: a step more than when the loss was seen.
for _ in $(seq 600); do [ "$(steps_in "$run" 0)" -gt "$before" ] && break; sleep 0.1; done
[ "$(steps_in "$run" 0)" -gt "$before" ] || bad "run 1: no step was written during the outage"
"$DDPDESK_SSHD_CTL" start || bad "run 1: sshd did not start again"
wait "${ranks[@]}" || bad "run 1: a rank failed: $(tail -n 5 "$tmp"/rank*.log)"
wait "$attach"; rc=$?
[ "$rc" -eq 0 ] || bad "run 1: attach exited $rc: $(cat "$tmp/a1.err")"
grep -q "reconnected to .*reading on from the bytes already mirrored" "$tmp/a1.err" ||
  bad "run 1: no 'reconnected' line: $(cat "$tmp/a1.err")"
grep -q "^finished after .*: 150 steps" "$tmp/a1.out" || bad "run 1: not 150 steps: $(cat "$tmp/a1.out")"
for r in 0 1; do
  want=$(steps_in "$run" $r) got=$(summary_steps "$tmp/a1.out" $r)
  [ "$want" = 150 ] && [ "$got" = "$want" ] || bad "run 1: rank $r: $got steps followed, $want in its file"
done
grep -q "metrics file was" "$tmp/a1.err" && bad "run 1: a file was read again from its start: $(cat "$tmp/a1.err")"
no_ssh_left "run 1"
echo "ok 1: sshd killed and started again mid-run: every step counted once"

# 2. sshd gone for good: the follow gives up after DDPDESK_SSH_RECONNECT_S.
sleep 1000 & live=$!; bg+=($!)
mkdir -p "$tmp/run2/metrics"
sed "1s/\"pid\":[0-9]*/\"pid\":$live/" "$run/metrics/rank-0.jsonl" | grep -v '"event":"finished"' |
  sed 's/"world":2/"world":1/' >"$tmp/run2/metrics/rank-0.jsonl"
DDPDESK_SSH_RECONNECT_S=3 timeout 100 "$ddpdesk" --headless --attach "$(url "$tmp/run2")" \
  >"$tmp/a2.out" 2>"$tmp/a2.err" &
attach=$!; bg+=($!)
wait_for "step " "$tmp/a2.out" 300 || bad "run 2: nothing followed: $(cat "$tmp/a2.err")"
"$DDPDESK_SSHD_CTL" stop
wait "$attach"; rc=$?
# 124: still trying when `timeout` ended it, as with the default limit (DDPDESK_SSH_RECONNECT_S
# not taken).
[ "$rc" -eq 1 ] || bad "run 2: attach exited $rc (want 1): $(cat "$tmp/a2.err")"
grep -q "lost the connection to .*(gave up after [1-9][0-9]* attempt(s) in [0-9]* s)" "$tmp/a2.err" ||
  bad "run 2: no 'gave up' line: $(cat "$tmp/a2.err")"
no_ssh_left "run 2"
echo "ok 2: with sshd gone the follow gives up after DDPDESK_SSH_RECONNECT_S"

[ "$fail" -eq 0 ] && echo "ok: ddpdesk --attach over ssh reconnects"
exit $fail
