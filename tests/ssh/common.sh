# Sourced by the scripts of tests/ssh (run under with_sshd.sh with WORKER DDPDESK): $worker,
# $ddpdesk, a temporary directory $tmp removed at exit with the processes listed in bg[], TMPDIR
# inside it (where a follow's mirror goes: no_ssh_left checks it is empty), none of torchrun's
# variables, and the helpers the scripts share. `fail` is 1 once bad() was called.
worker=$1
ddpdesk=$2
tmp=$(mktemp -d "/tmp/ddpdesk-$(basename "$0" .sh)-XXXXXX")
bg=()
cleanup() {
  for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1 TMPDIR=$tmp/local-tmp
mkdir -p "$TMPDIR"
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DDPDESK_MONITOR
url() { echo "ssh://root@127.0.0.1:$DDPDESK_SSH_PORT$1"; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
steps_in() { grep -c '"type":"step"' "$1/metrics/rank-$2.jsonl"; }
summary_steps() {  # rank's "steps" column in a headless summary
  awk -v r="$2" '$1 == "rank" && $3 == "steps" {t=1; next} t && $1 == r {print $3; exit}' "$1"
}
no_ssh_left() {
  if pgrep -f "ssh -F $DDPDESK_SSH_DIR" >/dev/null; then  # ssh_config and ssh_config_refused
    bad "$1: an ssh process was left behind: $(pgrep -af 'ssh -F')"
  fi
  [ -z "$(ls -A "$TMPDIR")" ] || bad "$1: left $(ls -A "$TMPDIR") in the temporary directory"
}
wait_for() {  # until the pattern is in the file; at most $3 tenths of a second
  for _ in $(seq "$3"); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
