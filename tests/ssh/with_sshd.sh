#!/usr/bin/env bash
# Runs a command with a private OpenSSH server on a loopback port: Debian's sshd (openssh-server)
# in the foreground, a throwaway host key and user key, and its config, keys, known_hosts and
# client config in a temporary directory, so it neither needs nor touches the system's sshd or
# anyone's ~/.ssh. The command sees
#   DDPDESK_SSH_COMMAND       "ssh -F <dir>/ssh_config" (the key sshd accepts, its host key known)
#   DDPDESK_SSH_PORT          the port sshd listens on (127.0.0.1)
#   DDPDESK_SSH_REFUSED       "ssh -F <dir>/ssh_config_refused" (a key sshd does not accept)
#   DDPDESK_SSH_DIR           the directory (sshd's log: sshd.log)
#   DDPDESK_SSHD_CTL          a script: `stop` kills sshd and every session it holds (SIGKILL,
#                             as a crash or a reboot would), `start` starts it again on the same
#                             port and waits until it lets the test user in
#   DDPDESK_SSH_BARE          "ssh -F <dir>/ssh_config -b 127.0.0.2": a session whose PATH holds
#                             nothing (a login node without the cluster's tools)
# Sessions leave out root's ~/.bashrc (see SetEnv below).
# SLURM_CONF, when set (inside tests/slurm/with_slurm.sh), reaches the sessions too (SendEnv /
# AcceptEnv), so this host is also a login node of that private cluster; so do the variables that
# choose where the worker's arithmetic runs (DNNL_*, ONEDNN_*, OPENBLAS_*, OMP_*, MKL_*: oneDNN's ISA
# cap, a pinned BLAS kernel set): ranks started over ssh must compute as the test's own reference
# run does, bit for bit (the same list keys the kept reference in tests/slurm/slurm_run_common.sh).
# sshd is stopped and everything removed when the command ends, however it ends.
# Exit status: the command's; 77 when sshd is not installed or this is not root.
#   tests/ssh/with_sshd.sh COMMAND [ARGS...]
set -uo pipefail
for tool in sshd ssh ssh-keygen; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "with_sshd: $tool is missing (scripts/install-deps.sh --tests installs openssh-server)"; exit 77; }
done
sshd=$(command -v sshd || echo /usr/sbin/sshd)
[ "$(id -u)" -eq 0 ] || { echo "with_sshd: sshd must run as root to log users in"; exit 77; }

dir=$(mktemp -d /tmp/ddpdesk-sshd-XXXXXX)
chmod 700 "$dir"
sshd_pid=
cleanup() {
  # An sshd started again by sshd_ctl is not our child: its pid file names it.
  if [ -s "$dir/sshd.pid" ] && [ "$(cat "$dir/sshd.pid")" != "$sshd_pid" ]; then
    kill "$(cat "$dir/sshd.pid")" 2>/dev/null
  fi
  if [ -n "$sshd_pid" ]; then
    kill "$sshd_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$sshd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$sshd_pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# sshd's privilege separation chroots into this (compiled in); systemd creates it for the
# packaged service, so without systemd it may be missing. Empty, root-owned, left in place.
[ -d /run/sshd ] || { mkdir -p /run/sshd && chmod 755 /run/sshd; }

port=$(/usr/bin/python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

ssh-keygen -q -t ed25519 -N '' -C ddpdesk-test-host -f "$dir/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C ddpdesk-test-user -f "$dir/user_ed25519"
ssh-keygen -q -t ed25519 -N '' -C ddpdesk-test-refused -f "$dir/refused_ed25519"
cp "$dir/user_ed25519.pub" "$dir/authorized_keys"
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" >"$dir/known_hosts"

cat >"$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PrintMotd no
PrintLastLog no
AcceptEnv SLURM_CONF DNNL_* ONEDNN_* OPENBLAS_* OMP_* MKL_*
# SHLVL=1: the session's bash counts itself a nested shell and leaves out ~/.bashrc, which bash
# otherwise runs for every command sshd hands it; the sessions see this host's system set-up,
# not the test machine's root dotfiles (one that ran \`pyenv init\` cost 0.65 s of CPU per
# command, some 200 commands per scripts/test.sh). sshd takes the first SetEnv that applies.
Match Address 127.0.0.2
  SetEnv PATH=/nonexistent SHLVL=1
Match all
  SetEnv SHLVL=1
CONF
for which in user refused; do
  name=ssh_config; [ "$which" = refused ] && name=ssh_config_refused
  cat >"$dir/$name" <<CONF
Host *
  IdentityFile $dir/${which}_ed25519
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
  SendEnv SLURM_CONF DNNL_* ONEDNN_* OPENBLAS_* OMP_* MKL_*
CONF
done

"$sshd" -D -e -f "$dir/sshd_config" -p "$port" >>"$dir/sshd.log" 2>&1 &
sshd_pid=$!

cat >"$dir/sshd_ctl" <<CTL
#!/bin/sh
case \$1 in
stop)
  pid=\$(cat "$dir/sshd.pid" 2>/dev/null) || exit 1
  all=\$pid; level=\$pid
  while [ -n "\$level" ]; do  # sshd's sessions and what they run, depth first
    level=\$(for p in \$level; do pgrep -P "\$p"; done)
    all="\$all \$level"
  done
  kill -9 \$all 2>/dev/null
  for _ in \$(seq 50); do kill -0 "\$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$dir/sshd.pid" ;;
start)
  "$sshd" -f "$dir/sshd_config" -p "$port" -E "$dir/sshd.log" || exit 1  # forks, writes its pid file
  for _ in \$(seq 100); do
    ssh -F "$dir/ssh_config" -o BatchMode=yes -p "$port" root@127.0.0.1 true 2>/dev/null && exit 0
    sleep 0.1
  done
  echo "sshd_ctl: sshd did not come back" >&2; exit 1 ;;
*) echo "usage: sshd_ctl stop|start" >&2; exit 2 ;;
esac
CTL
chmod +x "$dir/sshd_ctl"

export DDPDESK_SSH_COMMAND="ssh -F $dir/ssh_config" DDPDESK_SSH_REFUSED="ssh -F $dir/ssh_config_refused"
export DDPDESK_SSH_BARE="ssh -F $dir/ssh_config -b 127.0.0.2"
export DDPDESK_SSH_PORT=$port DDPDESK_SSH_DIR=$dir DDPDESK_SSHD_CTL=$dir/sshd_ctl
up=0
for _ in $(seq 100); do
  if ssh -F "$dir/ssh_config" -o BatchMode=yes -p "$port" root@127.0.0.1 true 2>/dev/null; then
    up=1; break
  fi
  kill -0 "$sshd_pid" 2>/dev/null || break
  sleep 0.1
done
if [ $up -ne 1 ]; then
  echo "with_sshd: sshd did not come up; its log:"
  tail -n 20 "$dir/sshd.log"
  exit 1
fi

"$@"
