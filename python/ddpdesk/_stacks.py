"""Where a rank's Python stacks go when ddpdesk's hang doctor asks for them (docs/recovery.md,
"Hang doctor"). faulthandler, registered on SIGNAL, writes every thread's stack to
<run_dir>/python-stacks/rank-N.txt; the file's first line names this process and the signal, so
the monitor signals only a rank that registered (the signal's default action would end one that
did not). The monitor sends it to the main thread alone (tgkill): faulthandler gives the thread
that registers it an alternate signal stack, so the dump never runs on the stack of a thread that
computes (a signal frame there corrupts oneDNN's JIT products: _signals.py).

SIGNAL is a real-time signal that neither ddpdesk-worker (engine/runtime/stop_signals.cpp: SIGINT
and SIGTERM) nor the client uses, nor the launchers scripts live under: Lightning's Slurm requeue
takes SIGUSR1, submitit's SIGUSR2."""

import faulthandler
import os
import signal

SIGNAL = signal.SIGRTMIN + 4
HEADER = "ddpdesk faulthandler pid=%d signal=%d\n"

_file = None  # kept open for faulthandler as long as the process lives


def path(run_dir, rank):
    return os.path.join(run_dir, "python-stacks", "rank-%d.txt" % rank)


def register(run_dir, rank):
    """Registers the dump for this rank; False (and nothing registered) when the file cannot be
    written. Only from the main thread (where the signal will be delivered)."""
    global _file
    if not run_dir:
        return False
    try:
        where = path(run_dir, rank)
        os.makedirs(os.path.dirname(where), exist_ok=True)
        f = open(where, "w", encoding="utf-8")
        f.write(HEADER % (os.getpid(), int(SIGNAL)))
        f.flush()
        faulthandler.register(SIGNAL, file=f, all_threads=True, chain=False)
    except (OSError, ValueError, RuntimeError):
        return False
    _file = f
    return True
