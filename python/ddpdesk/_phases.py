"""The step breakdown of a training script: ddpdesk.phase("forward") times a block as that part of
the optimizer step, and each step message then carries where the steps since the previous one
went (the wire's "time_ms", as ddpdesk-worker sends it), in milliseconds per step:

    data, forward, backward, comm, optimizer   what the script's phases measured
    other                                      the rest of the step: outside every phase
    step                                       the whole step, from one step message to the next

Phases nest: an inner phase's time is its own, not also its outer's, so the parts add up to the
step. "comm" goes on the wire only when the script measured it: a DDP script's gradient
allreduces run inside backward, so without it the monitor shows no wait and no sync efficiency
rather than a false 100%. Host time (time.perf_counter), as the worker's: on CUDA the device runs
ahead, and kernel time shows where the host next waits. For the training thread only."""

import time

PARTS = ("data", "forward", "backward", "comm", "optimizer")
_INDEX = {name: i for i, name in enumerate(PARTS)}
COMM = _INDEX["comm"]


def part_index(name):
    """The part's index; ValueError naming the parts for any other name."""
    i = _INDEX.get(name)
    if i is None:
        raise ValueError("ddpdesk.phase: unknown phase %r (one of: %s)" % (name, ", ".join(PARTS)))
    return i


class StepClock:
    """The phases' seconds since the last step message, and that message's time."""

    __slots__ = ("seconds", "stack", "since", "used", "comm_used", "last_at", "last_step")

    def __init__(self):
        self.seconds = [0.0] * len(PARTS)
        self.stack = []  # the open phases, innermost last
        self.since = 0.0  # when the innermost open phase last started counting
        self.used = False  # a phase was ever entered: step messages carry "time_ms"
        self.comm_used = False
        self.last_at = None  # perf_counter() of the last step message (None: none yet)
        self.last_step = 0

    def enter(self, i):
        now = time.perf_counter()
        stack = self.stack
        if stack:
            self.seconds[stack[-1]] += now - self.since
        stack.append(i)
        self.since = now
        self.used = True
        if i == COMM:
            self.comm_used = True

    def leave(self):
        now = time.perf_counter()
        stack = self.stack
        if stack:
            self.seconds[stack.pop()] += now - self.since
        self.since = now

    def take(self, step):
        """At a step message for `step` (on the calling thread, so only what must be done there):
        the seconds since the previous one, raw, for breakdown() on the sender thread; None for
        the first message, or one whose step did not advance (a resumed count starts over)."""
        now = time.perf_counter()
        if self.stack:  # a step message from inside a phase: its time so far is this step's
            self.seconds[self.stack[-1]] += now - self.since
            self.since = now
        seconds = self.seconds
        last_at, last_step = self.last_at, self.last_step
        self.last_at, self.last_step = now, step
        self.seconds = [0.0, 0.0, 0.0, 0.0, 0.0]
        if last_at is None or step <= last_step:
            return None
        return seconds, now - last_at, step - last_step, self.comm_used


def breakdown(taken):
    """StepClock.take()'s figures as (data, forward, backward, comm or None, optimizer, other,
    step, steps), in ms per step."""
    seconds, step_s, steps, comm_used = taken
    scale = 1000.0 / steps
    parts = [s * scale for s in seconds]
    step_ms = step_s * scale
    other = max(0.0, step_ms - sum(parts))
    return (parts[0], parts[1], parts[2], parts[3] if comm_used else None, parts[4], other,
            step_ms, steps)


class Phase:
    """The context manager ddpdesk.phase() returns inside ddpdesk (one per part, reused)."""

    __slots__ = ("_clock", "_i")

    def __init__(self, clock, i):
        self._clock = clock
        self._i = i

    def __enter__(self):
        self._clock.enter(self._i)
        return self

    def __exit__(self, kind, value, tb):
        self._clock.leave()
        return False


class NoPhase:
    """Outside ddpdesk: a block timed by nobody."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return False


NO_PHASE = NoPhase()


def timed(iterable, phase):
    """Yields what `iterable` yields, each next() timed as `phase` (a Phase or NO_PHASE)."""
    it = iter(iterable)
    while True:
        with phase:
            try:
                item = next(it)
            except StopIteration:
                return
        yield item
