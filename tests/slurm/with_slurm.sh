#!/usr/bin/env bash
# Runs a command inside a private single-node Slurm cluster started for it: munged, slurmctld and
# slurmd from Debian's packages (slurm-wlm, munge), in the foreground, with their keys, state,
# sockets and logs in a temporary directory, process tracking that needs no cgroups
# (proctrack/linuxproc, task/none), and ports of their own, so it neither needs nor touches a
# system Slurm. The command sees SLURM_CONF (srun, sbatch, squeue find the cluster through it)
# and DDPDESK_SLURM_DIR (the cluster's directory: logs). Everything is stopped and removed when
# the command ends, however it ends. Exit status: the command's; 77 when Slurm is not installed
# or cannot run here.
#   tests/slurm/with_slurm.sh COMMAND [ARGS...]
set -uo pipefail
for tool in munged slurmctld slurmd srun sinfo; do
  command -v "$tool" >/dev/null || { echo "with_slurm: $tool is missing (scripts/install-deps.sh --tests installs slurm-wlm and munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "with_slurm: slurmd must run as root to start tasks"; exit 77; }
# slurmd refuses to start without the cgroup filesystem, even with proctrack/linuxproc: a chroot
# or a container that does not mount it cannot run these tests (a machine always has it).
mountpoint -q /sys/fs/cgroup ||
  { echo "with_slurm: no cgroup filesystem at /sys/fs/cgroup, which slurmd needs"; exit 77; }

dir=$(mktemp -d /tmp/ddpdesk-slurm-XXXXXX)
chmod 700 "$dir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Two free TCP ports for slurmctld and slurmd.
read -r ctld_port slurmd_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
munged --foreground --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munge.seed" 2>>"$dir/munge/munged.log" &
pids+=($!); disown

# Job ids from a random start: the ranks' default MASTER_PORT is derived from the job id, and two
# private clusters on one machine (tests of several checkouts at once) both numbering from 1
# would give their concurrent jobs one port, so ranks of different jobs met in one rendezvous.
first_job=$((1 + RANDOM % 9000))
node=$(hostname -s)
cpus=$(nproc --all)  # not nproc: it obeys OMP_NUM_THREADS, which tests set to 1
cat >"$dir/slurm.conf" <<CONF
ClusterName=ddpdesk-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
FirstJobId=$first_job
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$dir/slurm.conf DDPDESK_SLURM_DIR=$dir

for _ in $(seq 100); do [ -S "$dir/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >>"$dir/slurmctld.log" 2>&1 &
pids+=($!); disown
slurmd -D -f "$SLURM_CONF" -N "$node" >>"$dir/slurmd.log" 2>&1 &
pids+=($!); disown

# Up when the node is idle (or mixed/allocated: a previous job of ours cannot exist, but be lenient).
up=0
for _ in $(seq 150); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1)
  case "$state" in idle* | mix* | alloc*) up=1; break ;; esac
  sleep 0.2
done
if [ $up -ne 1 ]; then
  echo "with_slurm: the cluster did not come up (node state '${state:-none}'); logs:"
  tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" "$dir/munge/munged.log"
  exit 1
fi

"$@"
