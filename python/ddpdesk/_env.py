"""What the client reads from its environment, once, when it is imported: where the rank sits in
the job (torchrun's RANK/WORLD_SIZE/LOCAL_RANK, else Slurm's SLURM_PROCID/SLURM_NTASKS/
SLURM_LOCALID, else a single rank: as ddpdesk-worker reads them, engine/runtime/rank_env.cpp) and
the DDPDESK_* variables ddpdesk sets for a rank (docs/python-client.md)."""

import re
from dataclasses import dataclass

MAX_WORLD = 1 << 20

# Set by the client in the rank's own environment, so a process the rank starts (a spawned
# DataLoader worker or multiprocessing child re-imports the script, and ddpdesk with it) knows it
# is not the rank: it stays quiet and takes SIGTERM as Python does by default.
OWNER_VARIABLE = "DDPDESK_CLIENT_PID"


class BadEnvironment(Exception):
    """One line naming the variable, its value and what is allowed."""


@dataclass
class Settings:
    monitor: str = ""  # DDPDESK_MONITOR: the monitor's socket
    token: str = ""  # DDPDESK_TOKEN: the run's token, sent in the hello
    run_dir: str = ""  # DDPDESK_RUN_DIR: metrics/rank-N.jsonl goes there
    stop_file: str = ""  # DDPDESK_STOP_FILE: its existence asks for a stop
    device: str = "cpu"  # hello's device: cpu, or cuda:<local rank> with DDPDESK_DEVICE=cuda
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    owner_pid: int = 0  # DDPDESK_CLIENT_PID as found (0: unset)

    def in_ddpdesk(self):
        """Whether this process is a rank that ddpdesk started (or one writing a run directory)."""
        return bool(self.monitor or self.run_dir or self.stop_file)


def _int(env, name, lo, hi):
    raw = env.get(name)
    if raw is None:
        return None
    value = int(raw) if re.fullmatch(r"[0-9]{1,10}", raw) else None
    if value is None or not lo <= value <= hi:
        raise BadEnvironment(
            "invalid environment %s='%s': must be an integer from %d to %d" % (name, raw, lo, hi))
    return value


def read(env):
    """Settings from a mapping like os.environ; raises BadEnvironment for a malformed value."""
    s = Settings()
    s.monitor = env.get("DDPDESK_MONITOR", "")
    s.token = env.get("DDPDESK_TOKEN", "")
    s.run_dir = env.get("DDPDESK_RUN_DIR", "")
    s.stop_file = env.get("DDPDESK_STOP_FILE", "")
    owner = env.get(OWNER_VARIABLE, "")
    s.owner_pid = int(owner) if owner.isdigit() else 0
    if not s.in_ddpdesk():
        return s  # outside ddpdesk nothing else matters, and nothing is refused
    rank = _int(env, "RANK", 0, MAX_WORLD)
    world = _int(env, "WORLD_SIZE", 1, MAX_WORLD)
    if rank is not None or world is not None:
        if rank is None or world is None:
            raise BadEnvironment("incomplete environment: RANK and WORLD_SIZE must be set together")
        local = _int(env, "LOCAL_RANK", 0, MAX_WORLD)
        s.local_rank = rank if local is None else local
    else:
        rank = _int(env, "SLURM_PROCID", 0, MAX_WORLD)
        world = _int(env, "SLURM_NTASKS", 1, MAX_WORLD)
        if rank is None or world is None:
            rank, world = 0, 1
        local = _int(env, "SLURM_LOCALID", 0, MAX_WORLD)
        s.local_rank = 0 if local is None else local
    if rank >= world:
        raise BadEnvironment("invalid rank %d: must be below world size %d" % (rank, world))
    s.rank, s.world = rank, world
    device = env.get("DDPDESK_DEVICE", "") or "cpu"
    if device not in ("cpu", "cuda"):
        raise BadEnvironment(
            "invalid environment DDPDESK_DEVICE='%s': must be cpu or cuda" % device)
    s.device = "cuda:%d" % s.local_rank if device == "cuda" else "cpu"
    return s
