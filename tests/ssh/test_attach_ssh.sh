#!/usr/bin/env bash
# Under a private sshd (with_sshd.sh): `ddpdesk --headless --attach ssh://root@127.0.0.1:PORT/DIR`
#  1. follows two real ranks (started by hand with torchrun's variables, --run-dir DIR) to their
#     end: exit 0, every rank's step count in the summary equals the step lines in its file;
#  2. a rank killed with SIGKILL (no last word) is found gone by the pid check over ssh: exit 1,
#     "exited without a last message";
#  3. rank files replaced, truncated and rewritten in place (replayed from run 1): the summary is
#     the one a local --attach of the same directory prints;
#  4. a resumed rank (a second hello in its file) killed without a word: its new pid is checked;
#  5. an unreachable host, a refused key, a missing directory, a bad URL and a missing ssh
#     client: one line, exit 2, no ssh process left, no mirror directory left.
#   with_sshd.sh tests/ssh/test_attach_ssh.sh WORKER DDPDESK
set -uo pipefail
source "$(dirname "$0")/common.sh"

# Two ranks of the seed task on this machine, writing into $1; extra worker flags after it.
start_ranks() {
  local dir=$1; shift
  local port
  port=$(free_port)
  ranks=()
  for r in 0 1; do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$worker" --run-dir "$dir" --task seed --seed 5 "$@" >"$dir.rank$r.log" 2>&1 &
    ranks+=($!); bg+=($!)
  done
}

# 1. A real run followed to its end.
mkdir -p "$tmp/run1"
timeout 150 "$ddpdesk" --headless --attach "$(url "$tmp/run1")" >"$tmp/a1.out" 2>"$tmp/a1.err" &
attach=$!; bg+=($!)
start_ranks "$tmp/run1" --dataset-size 400 --epochs 1
wait "${ranks[@]}" || bad "run 1: a rank failed: $(tail -n 5 "$tmp"/run1.rank*.log)"
wait "$attach"; rc=$?
[ "$rc" -eq 0 ] || bad "run 1: attach exited $rc: $(cat "$tmp/a1.err")"
grep -q "^finished after .*: 50 steps" "$tmp/a1.out" || bad "run 1: no '50 steps' summary: $(cat "$tmp/a1.out")"
for r in 0 1; do
  want=$(steps_in "$tmp/run1" $r) got=$(summary_steps "$tmp/a1.out" $r)
  [ "$want" = 50 ] && [ "$got" = "$want" ] || bad "run 1: rank $r: $got steps followed, $want in its file"
done
grep -q "through ssh" "$tmp/a1.err" || bad "run 1: no 'following … through ssh' line"
no_ssh_left "run 1"
echo "ok 1: two real ranks followed over ssh, every step once"

# 2. A rank killed without a word: the pid check on the remote host ends the run as failed.
mkdir -p "$tmp/run2"
timeout 150 "$ddpdesk" --headless --attach "$(url "$tmp/run2")" >"$tmp/a2.out" 2>"$tmp/a2.err" &
attach=$!; bg+=($!)
start_ranks "$tmp/run2" --dataset-size 400 --epochs 500
for _ in $(seq 600); do [ "$(steps_in "$tmp/run2" 1 2>/dev/null)" -ge 5 ] 2>/dev/null && break; sleep 0.2; done
kill -9 "${ranks[1]}"
wait "$attach"; rc=$?
kill "${ranks[0]}" 2>/dev/null
[ "$rc" -eq 1 ] || bad "run 2: attach exited $rc (want 1): $(tail -n 3 "$tmp/a2.err")"
grep -q "^1 .*exited without a last message (pid ${ranks[1]} is gone)" "$tmp/a2.out" ||
  bad "run 2: the killed rank is not named: $(cat "$tmp/a2.out" "$tmp/a2.err")"
no_ssh_left "run 2"
echo "ok 2: a rank killed on the remote host is found gone"

# 3. Files replaced, truncated and rewritten: the same summary as a local attach.
sleep 1000 & live=$!; bg+=($!)
mkdir -p "$tmp/run3/metrics"
m=$tmp/run3/metrics
replay() {  # rank's file from run 1 with the hello's pid made $live (the ranks of run 1 are gone)
  sed "1s/\"pid\":[0-9]*/\"pid\":$2/" "$tmp/run1/metrics/rank-$1.jsonl"
}
replay 0 "$live" >"$tmp/r0"; replay 1 "$live" >"$tmp/r1"
replay 1 "$$" >"$tmp/r1b"  # another pid: a restarted rank, whose hello differs
timeout 150 "$ddpdesk" --headless --attach "$(url "$tmp/run3")" >"$tmp/a3.out" 2>"$tmp/a3.err" &
attach=$!; bg+=($!)
timeout 150 "$ddpdesk" --headless --attach "$tmp/run3" >"$tmp/l3.out" 2>"$tmp/l3.err" &
local_attach=$!; bg+=($!)
# Each stage is seen by both followers before the next (what each saw decides its step counts).
seen_by_both() {  # pattern, local file, ssh file: wait until both hold it
  for _ in $(seq 600); do
    grep -q "$1" "$2" && grep -q "$1" "$3" && return 0
    sleep 0.1
  done
  bad "run 3: '$1' not seen by both followers"
}
# Rank 1's part first, whole, then rank 0's: a follower's poll reads every rank file there is, so
# one that has shown a step (of either rank) has read all of rank 1's part; over ssh the remote
# loop may still be sending it (rank 0's file comes first in its pass), hence the second wait: for
# the ssh follower's mirror (in $TMPDIR) to hold all of it, which its follower reads as each poll
# lands there. (Waiting for rank 1's own last step would not do: a follower writing to a file
# prints its progress every 5 s.)
head -c 2100 "$tmp/r1" >"$m/rank-1.jsonl"
head -c 1500 "$tmp/r0" >"$m/rank-0.jsonl"  # ends inside a line
seen_by_both "step " "$tmp/l3.out" "$tmp/a3.out"
mirrored() {  # bytes of rank $1's file in the ssh follower's mirror
  local f
  f=$(find "$TMPDIR" -path "*/metrics/rank-$1.jsonl" 2>/dev/null | head -n 1)
  if [ -n "$f" ]; then stat -c %s "$f"; else echo 0; fi
}
for _ in $(seq 600); do [ "$(mirrored 1)" -ge 2100 ] && break; sleep 0.1; done
[ "$(mirrored 1)" -eq 2100 ] || bad "run 3: the ssh follower's mirror has $(mirrored 1) of rank 1's 2100 bytes"
# Truncated in place, shorter, in one call (`head -c 900 >` empties the file first: a follower
# polling in that moment saw an empty file, and the rewrite below as new lines, not a rewrite).
truncate -s 900 "$m/rank-1.jsonl"
seen_by_both "rank 1's metrics file was truncated" "$tmp/l3.err" "$tmp/a3.err"
# Rewritten in place, longer than before: overwritten from its start without truncating first
# (`>` empties the file, and a follower polling in that moment saw a truncation, then the new
# lines as appended, and never the rewrite).
head -c 4000 "$tmp/r1b" |
  dd of="$m/rank-1.jsonl" bs=4000 count=1 iflag=fullblock conv=notrunc status=none
seen_by_both "rank 1's metrics file was rewritten" "$tmp/l3.err" "$tmp/a3.err"
cp "$tmp/r0" "$m/.rank-0.new" && mv "$m/.rank-0.new" "$m/rank-0.jsonl"  # replaced whole
# The rest of rank 1's lines appended (a `cat >` would truncate first, and whether a poll caught
# the empty file in between decided each follower's count: the two could differ by timing alone).
tail -c +4001 "$tmp/r1b" >>"$m/rank-1.jsonl"
wait "$attach"; rc=$?
wait "$local_attach"; lrc=$?
[ "$rc" -eq "$lrc" ] || bad "run 3: exit $rc over ssh, $lrc locally: $(cat "$tmp/a3.err")"
strip() { grep -v "^run directory\|samples/s\|^finished after\|^[01]  .*ms\|^[01]  .*MiB" "$1"; }
diff <(strip "$tmp/l3.out") <(strip "$tmp/a3.out") >"$tmp/d3" ||
  bad "run 3: the summaries differ (local < > ssh): $(cat "$tmp/d3")"
grep -q "^finished after .*: 50 steps" "$tmp/a3.out" || bad "run 3: not finished after 50 steps: $(cat "$tmp/a3.out")"
for r in 0 1; do
  [ "$(summary_steps "$tmp/a3.out" $r)" = "$(summary_steps "$tmp/l3.out" $r)" ] ||
    bad "run 3: rank $r's steps differ from the local attach"
done
[ "$(cd "$tmp/run3" && find . | sort | tr '\n' ' ')" = ". ./metrics ./metrics/rank-0.jsonl ./metrics/rank-1.jsonl " ] ||
  bad "run 3: the followed directory holds more than the test wrote: $(cd "$tmp/run3" && find .)"
no_ssh_left "run 3"
echo "ok 3: replaced, truncated and rewritten files followed as a local attach follows them"

# 4. A resumed rank (a new hello appended to its file) that then dies without a word: its new
#    pid is the one checked, as a local attach checks it.
sleep 1000 & second=$!; bg+=($!)
mkdir -p "$tmp/run4/metrics"
host=$(uname -n)
{
  sed "1s/\"pid\":[0-9]*/\"pid\":$live/; s/\"world\":2/\"world\":1/" "$tmp/run1/metrics/rank-0.jsonl" |
    grep -v '"event":"finished"' | head -n 30
  echo '{"epoch":0,"event":"stopped","rank":0,"step":9,"time":1.0,"type":"event"}'
  echo "{\"device\":\"cpu\",\"host\":\"$host\",\"pid\":$second,\"rank\":0,\"token\":\"\",\"type\":\"hello\",\"v\":1,\"v_max\":1,\"v_min\":1,\"world\":1}"
} >"$tmp/run4/metrics/rank-0.jsonl"
timeout 150 "$ddpdesk" --headless --attach "$(url "$tmp/run4")" >"$tmp/a4.out" 2>"$tmp/a4.err" &
attach=$!; bg+=($!)
timeout 150 "$ddpdesk" --headless --attach "$tmp/run4" >"$tmp/l4.out" 2>"$tmp/l4.err" &
local_attach=$!; bg+=($!)
# Both follow the file (each has shown a step of the first life). Whenever each reads the second
# life's hello, before the kill below or after it, that hello's pid is the one to check.
for _ in $(seq 600); do grep -q "step " "$tmp/l4.out" && grep -q "step " "$tmp/a4.out" && break; sleep 0.1; done
grep -q "step " "$tmp/a4.out" || bad "run 4: the ssh attach showed no step: $(cat "$tmp/a4.out" "$tmp/a4.err")"
grep -q "step " "$tmp/l4.out" || bad "run 4: the local attach showed no step: $(cat "$tmp/l4.out" "$tmp/l4.err")"
kill -0 "$attach" 2>/dev/null || bad "run 4: the ssh attach ended while the resumed rank ran: $(cat "$tmp/a4.out" "$tmp/a4.err")"
kill -9 "$second"
wait "$attach"; rc=$?
wait "$local_attach"; lrc=$?
[ "$rc" -eq 1 ] && [ "$lrc" -eq 1 ] || bad "run 4: exit $rc over ssh, $lrc locally (want 1 and 1)"
grep -q "^0 .*exited without a last message (pid $second is gone)" "$tmp/a4.out" ||
  bad "run 4: the resumed rank's death is not seen: $(cat "$tmp/a4.out" "$tmp/a4.err")"
no_ssh_left "run 4"
echo "ok 4: a resumed rank's new pid is the one checked on the remote host"

# 5. Bad input: one line, exit 2, nothing left.
closed=$(free_port)
check_bad() {  # name, expected text, then the environment change and URL
  local name=$1 want=$2 cmd=$3 target=$4
  DDPDESK_SSH_COMMAND=$cmd timeout 60 "$ddpdesk" --headless --attach "$target" >"$tmp/b.out" 2>"$tmp/b.err"
  local rc=$?
  [ "$rc" -eq 2 ] || bad "$name: exit $rc (want 2): $(cat "$tmp/b.err")"
  [ "$(wc -l <"$tmp/b.err")" -eq 1 ] || bad "$name: not one line: $(cat "$tmp/b.err")"
  grep -q -- "$want" "$tmp/b.err" || bad "$name: '$want' not in: $(cat "$tmp/b.err")"
  no_ssh_left "$name"
}
check_bad "unreachable host" "Connection refused" "$DDPDESK_SSH_COMMAND" \
  "ssh://root@127.0.0.1:$closed$tmp/run1"
check_bad "refused key" "Permission denied" "$DDPDESK_SSH_REFUSED" "$(url "$tmp/run1")"
check_bad "missing directory" "no such directory" "$DDPDESK_SSH_COMMAND" "$(url "$tmp/nowhere")"
check_bad "no ssh client" "cannot run the ssh client" "$tmp/no-such-ssh" "$(url "$tmp/run1")"
check_bad "bad URL" "invalid remote run" "$DDPDESK_SSH_COMMAND" "ssh://:22/x"
echo "ok 5: bad input is one line and exit code 2, nothing left behind"

[ "$fail" -eq 0 ] && echo "ok: ddpdesk --attach over ssh"
exit $fail
