#!/usr/bin/env bash
# launch-local.sh NPROC CMD...: runs NPROC ranks of CMD on this machine with torchrun's
# environment contract (what `ddpdesk --headless` does, minus the monitor). Exit: the first
# non-zero rank exit code, else 0. Ctrl+C reaches every rank (a graceful stop).
set -u
n=$1; shift
export MASTER_ADDR=127.0.0.1 WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export MASTER_PORT=${MASTER_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
pids=()
for ((r = 0; r < n; r++)); do RANK=$r LOCAL_RANK=$r "$@" & pids+=($!); done
trap 'kill -TERM "${pids[@]}" 2>/dev/null' INT TERM
rc=0
for p in "${pids[@]}"; do wait "$p" || { c=$?; [ $rc -eq 0 ] && rc=$c; }; done
exit $rc
