"""ddpdesk's client for training scripts: live per-rank metrics and the Stop button.

    import ddpdesk            # first, before torch starts its threads (see "Stop" below)
    ...
    for step, batch in enumerate(loader, 1):
        loss = train_step(batch)
        ddpdesk.log(step=step, loss=loss.item(), samples=step * global_batch, lr=lr)
        if ddpdesk.should_stop():
            save_checkpoint(ddpdesk.run_dir())
            break

Inside a rank that ddpdesk started (DDPDESK_MONITOR, DDPDESK_RUN_DIR or DDPDESK_STOP_FILE in the
environment) log() queues the values for a sender thread, which speaks ddpdesk's wire format to
the monitor's socket and writes <run_dir>/metrics/rank-N.jsonl; log() never waits. Outside
ddpdesk every function is a cheap no-op: run_dir() is None, should_stop() False.

Stop: inside a rank, importing ddpdesk blocks SIGTERM and SIGINT in the importing thread (so in
every thread started afterwards) and takes them on a thread of its own: the first sets
should_stop(), a second exits at once with 128 + the signal's number. A script that never asks
should_stop() is ended by the first one, as without the client. docs/python-client.md has it all.
Pure standard library."""

import atexit
import os
import sys
import time

from . import _env
from . import _phases
from . import _signals
from . import _stacks
from ._client import Client

__all__ = ["log", "log_eval", "phase", "timed", "should_stop", "request_stop", "run_dir",
           "active", "rank", "world_size", "set_total_steps", "checkpoint", "dropped", "close"]

_CLIENT = None  # None outside ddpdesk: every function returns at once
_settings = _env.Settings()


def log(step=None, loss=None, samples=None, *, epoch=None, global_loss=None, **scalars):
    """Reports one optimizer step of this rank, without waiting for anything.

    step: optimizer steps done (default: the previous one + 1); loss: this rank's loss (a number,
    or anything float() takes: a 0-d tensor costs a device sync, so pass loss.item() you already
    have); samples: global samples trained so far (default: as last given); epoch: from 0;
    global_loss: the loss over every rank, when the script computes it (a single rank's loss is
    its global loss). A call without loss sends only the scalars. Every other keyword is a
    scalar of its own (lr=..., grad_norm=..., tokens_per_s=...): a series per rank and name.
    NaN and infinities are sent as gaps (null); a value float() refuses is skipped and counted."""
    c = _CLIENT
    if c is not None:
        c.log(step, loss, samples, epoch, global_loss, scalars)


def log_eval(loss, accuracy=None, *, samples=0, step=None, epoch=None):
    """Reports an evaluation (global figures: send them from one rank): its loss, accuracy as a
    fraction, and the samples it covered, at the last logged step unless told."""
    c = _CLIENT
    if c is not None:
        c.eval(loss, accuracy, samples, step, epoch)


def phase(name):
    """Times a block as one part of the optimizer step, for the Time per step chart:

        with ddpdesk.phase("forward"):
            loss = criterion(model(x), y)

    name: "data", "forward", "backward", "comm" or "optimizer" (ValueError for any other, also
    outside ddpdesk). The next step message (log() with a loss) carries each part in ms per step
    since the previous one, and "other" for the rest of the step. Phases nest (the inner one's
    time is its own). Host time; the training thread only. Outside ddpdesk a no-op."""
    i = _phases.part_index(name)
    c = _CLIENT
    return _phases.NO_PHASE if c is None else c.phases[i]


def timed(iterable, part="data"):
    """`for x, y in ddpdesk.timed(loader):` the loader's next() timed as `part` (default "data").
    Outside ddpdesk the iterable itself."""
    p = phase(part)
    return iterable if p is _phases.NO_PHASE else _phases.timed(iterable, p)


def should_stop():
    """True once a stop was asked for: the monitor's Stop (SIGTERM), Ctrl+C (SIGINT), or the run's
    stop file. Check it at every step and leave the loop (checkpoint first) when it is."""
    c = _CLIENT
    if c is None:
        return False
    c.asked = True
    return c.stop_requested


def request_stop(reason="stopped with the other ranks"):
    """Marks this rank as stopping without a signal of its own: its ranks agreed to stop (one of
    them was asked), or the script decided to. should_stop() becomes true, and the rank ends as
    stopped, not finished."""
    c = _CLIENT
    if c is not None:
        c.request_stop(str(reason))


def run_dir():
    """The run's directory (DDPDESK_RUN_DIR: checkpoints go there), or None outside ddpdesk."""
    return _settings.run_dir or None


def active():
    """Whether this process is a rank ddpdesk started (the functions do something)."""
    return _CLIENT is not None


def rank():
    """This process's rank (RANK, or SLURM_PROCID), 0 outside a job."""
    return _settings.rank


def world_size():
    """Ranks in the job (WORLD_SIZE, or SLURM_NTASKS), 1 outside a job."""
    return _settings.world


def set_total_steps(total_steps):
    """The run's length in optimizer steps, for the progress bar and the ETA."""
    c = _CLIENT
    if c is not None:
        c.event("started", total_steps=max(0, int(total_steps)))


def checkpoint(path):
    """Tells the monitor a checkpoint was written (shown as the run's last checkpoint)."""
    c = _CLIENT
    if c is not None:
        c.event("checkpoint", path=os.fspath(path))


def dropped():
    """Messages that did not reach the monitor: it did not read them in time, or log() was called
    faster than the client could send (the first kind is still in the metrics file)."""
    c = _CLIENT
    return 0 if c is None else c.dropped()


def close(drain_s=2.0):
    """Sends the rank's last word and what is queued (for up to drain_s seconds), then closes.
    Runs by itself at exit; log() after it does nothing."""
    c = _CLIENT
    if c is not None:
        c.close(drain_s)


def _on_signal(sig, sender=0):
    """On the signal thread: the first signal asks for a stop, a second one ends the process now,
    unless it is the same request delivered again (_signals.Repeats: from the process that
    started the rank, or the same signal within half a second).
    A script that never asked should_stop() could not stop gracefully: the first one ends it,
    after the client's last word, as the signal would have without ddpdesk. (The stop file does
    not count as a signal: the monitor's Stop may come both ways.)"""
    repeat = _repeats.same(sig, sender, time.monotonic())
    c = _CLIENT
    for _ in range(100):  # a signal in the moment between the block and the client: wait for it
        if c is not None:
            break
        time.sleep(0.01)
        c = _CLIENT
    if c is not None:
        if c.signals and repeat:
            return
        c.signals += 1
        c.request_stop("stop requested by " + {2: "SIGINT", 15: "SIGTERM"}.get(sig, str(sig)))
        if c.signals == 1 and c.asked:
            return
        if c.signals == 1:
            c.close(drain_s=1.0)
    os._exit(128 + sig)


def _excepthook(kind, value, tb):
    c = _CLIENT
    if c is not None and not issubclass(kind, (KeyboardInterrupt, SystemExit)):
        c.failure = ("%s: %s" % (kind.__name__, value) if str(value) else kind.__name__)[:1000]
    _previous_excepthook(kind, value, tb)


def _start():
    global _CLIENT, _settings, _previous_excepthook
    try:
        settings = _env.read(os.environ)
    except _env.BadEnvironment as e:
        print("ddpdesk: %s" % e, file=sys.stderr, flush=True)
        raise SystemExit(2)
    _settings = settings
    if not settings.in_ddpdesk():
        return
    if settings.owner_pid and settings.owner_pid != os.getpid():
        # A process the rank started (spawned, so it re-imports the script): not the rank. It
        # inherited the rank's block of SIGTERM and SIGINT through exec; Python's own behaviour
        # comes back, and nothing is sent.
        _settings = _env.Settings(run_dir=settings.run_dir, rank=settings.rank,
                                  world=settings.world, local_rank=settings.local_rank)
        _signals.unblock()
        return
    os.environ[_env.OWNER_VARIABLE] = str(os.getpid())
    late = _signals.other_threads()
    # The block first: the client's own threads start with it, as every later one does.
    signals = _signals.StopSignals(_on_signal)
    taken = signals.take()
    _CLIENT = Client(settings)
    if not taken:
        _CLIENT._say("imported outside the main thread: SIGTERM and SIGINT keep "
                     "Python's behaviour, and should_stop() sees only the stop file")
    elif late:
        _CLIENT._say("imported after %d other thread(s) started: a stop signal may "
                     "interrupt one of them mid-computation; put `import ddpdesk` first" % late)
    if taken:  # the main thread: the hang doctor's signal is delivered there (_stacks.py)
        _stacks.register(settings.run_dir, settings.rank)
    if settings.stop_file and os.path.exists(settings.stop_file):
        _CLIENT.request_stop("stop requested before this rank started (stop file %s)"
                             % settings.stop_file)
    os.register_at_fork(after_in_child=_CLIENT.after_fork_in_child)
    _previous_excepthook = sys.excepthook
    sys.excepthook = _excepthook
    atexit.register(_CLIENT.close)


_previous_excepthook = sys.excepthook
_repeats = _signals.Repeats(os.getppid())  # before _start(): a signal may come at once
_start()
