#!/usr/bin/env bash
# The ranks' output in a followed run: two real ranks started by hand with their stdout and
# stderr in DIR/rank-N.log (as srun's --output=rank-%t.log and ddpdesk's own runs have them),
# rank 0's loss made NaN at step 3 (a test-only fault) so both fail. Followed at once by
# `ddpdesk --headless --attach DIR` and, under a private sshd (with_sshd.sh), `--attach
# ssh://…/DIR`: both exit 1 and their failure message ends with the last lines of rank 0's
# rank-N.log, the same lines locally and over ssh, a line the error message does not hold among them.
#   with_sshd.sh tests/ssh/test_attach_output.sh WORKER DDPDESK
set -uo pipefail
source "$(dirname "$0")/common.sh"

run=$tmp/run
mkdir -p "$run"
timeout 60 "$ddpdesk" --headless --attach "$run" >"$tmp/l.out" 2>"$tmp/l.err" &
local_attach=$!; bg+=($!)
timeout 60 "$ddpdesk" --headless --attach "$(url "$run")" \
  >"$tmp/s.out" 2>"$tmp/s.err" &
ssh_attach=$!; bg+=($!)
port=$(free_port)
for r in 0 1; do
  DDPDESK_FAULT_NAN_AT_STEP=3 RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$worker" --run-dir "$run" --task seed --seed 5 --dataset-size 400 --epochs 1 \
    >"$run/rank-$r.log" 2>&1 &
  bg+=($!)
done
wait "$local_attach"; lrc=$?
wait "$ssh_attach"; src=$?
[ "$lrc" -eq 1 ] || bad "local attach exited $lrc (want 1): $(cat "$tmp/l.err")"
[ "$src" -eq 1 ] || bad "ssh attach exited $src (want 1): $(cat "$tmp/s.err")"
# The failure message: "rank 0 failed: …", then "last lines of rank 0's output (rank-0.log):" and
# the lines, indented.
tail_of() { cat "$1.out" "$1.err" | sed -n "/^.*last lines of rank 0's output (rank-0.log):/,\$p" | grep '^  '; }
want=$(tail -n 10 "$run/rank-0.log" | sed 's/^/  /')
[ -n "$want" ] || bad "rank 0 wrote no output"
grep -q "step 1/50" "$run/rank-0.log" || bad "rank 0's output has no step line: $(cat "$run/rank-0.log")"
[ "$(tail_of "$tmp/l")" = "$want" ] ||
  bad "local attach: the failure does not end with rank 0's output: $(cat "$tmp/l.out" "$tmp/l.err")"
[ "$(tail_of "$tmp/s")" = "$want" ] ||
  bad "ssh attach: the failure does not end with rank 0's output: $(cat "$tmp/s.out" "$tmp/s.err")"
[ "$fail" -eq 0 ] && echo "ok: a followed run's failure shows the rank's output, locally and over ssh"
exit $fail
