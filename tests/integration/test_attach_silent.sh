#!/usr/bin/env bash
# A followed rank on "another node" that dies without a word: its hello names a host that is not
# this one, so the monitor cannot check its pid. With DDPDESK_SILENT_S=2, `ddpdesk --headless
# --attach DIR` says within seconds that the rank has been silent and the run may be stalled
# (instead of Running forever with nothing said), keeps following, and when the rank's file
# gives a line again says it is heard from again; its last word then ends the run (exit 0).
# The rank's lines are those of a real one-rank run, replayed by a process that is SIGKILLed.
#   tests/integration/test_attach_silent.sh WORKER DDPDESK
set -uo pipefail
worker=$1
ddpdesk=$2
tmp=$(mktemp -d /tmp/ddpdesk-attach-silent-XXXXXX)
bg=()
cleanup() {
  for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${replayer:-}" ] && kill -9 -- -"$replayer" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DDPDESK_MONITOR
fail=0
bad() { echo "FAIL: $*"; fail=1; }
wait_for() {  # pattern, file, tenths of a second
  for _ in $(seq "$3"); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# One real rank's file to replay.
"$worker" --run-dir "$tmp/real" --task seed --seed 5 --dataset-size 400 --epochs 1 \
  >"$tmp/real.log" 2>&1 || { echo "FAIL: the real rank failed: $(tail -n 5 "$tmp/real.log")"; exit 1; }
real=$tmp/real/metrics/rank-0.jsonl
grep -q '"event":"finished"' "$real" || { echo "FAIL: no finished run to replay"; exit 1; }

mkdir -p "$tmp/run/metrics"
file=$tmp/run/metrics/rank-0.jsonl
DDPDESK_SILENT_S=2 timeout 300 "$ddpdesk" --headless --attach "$tmp/run" >"$tmp/a.out" 2>"$tmp/a.err" &
attach=$!; bg+=($!)
# The "rank" on node-b: its hello names that host and its own pid, then its steps come slowly.
setsid sh -c 'sed "1s/\"host\":\"[^\"]*\"/\"host\":\"node-b.invalid\"/; 1s/\"pid\":[0-9]*/\"pid\":$$/" "$1" |
  grep -v "\"event\":\"finished\"" | while IFS= read -r line; do printf "%s\n" "$line"; sleep 0.02; done' \
  replay "$real" >>"$file" &
replayer=$!; bg+=($!)
wait_for '"step":5,' "$file" 1200 || bad "the replay wrote no step 5"
kill -9 -- -"$replayer"  # its session: sh, sed, grep and the loop
wait "$replayer" 2>/dev/null
SECONDS=0
# "silent for N s": N is at least DDPDESK_SILENT_S, more when the monitor looked late (a loaded
# machine). It must say so, however late: the follow's own timeout is the limit.
wait_for "rank 0 (pid [0-9]* on node-b.invalid) has been silent for \([2-9]\|[1-9][0-9][0-9]*\) s" \
  "$tmp/a.err" 1200 || bad "no 'silent' line: $(cat "$tmp/a.err")"
kill -0 "$attach" 2>/dev/null || bad "the follow ended when the rank went silent: $(cat "$tmp/a.out")"
grep "\"event\":\"finished\"" "$real" >>"$file"  # its last word after all
wait "$attach"; rc=$?
[ "$rc" -eq 0 ] || bad "attach exited $rc (want 0): $(cat "$tmp/a.err")"
grep -q "rank 0 is heard from again" "$tmp/a.err" || bad "no 'heard from again' line: $(cat "$tmp/a.err")"
[ "$fail" -eq 0 ] && echo "ok: a silent rank on another node is reported, then heard from again"
exit $fail
