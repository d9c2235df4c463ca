"""The client behind ddpdesk's functions: log() puts a record on a bounded queue and returns; a
sender thread turns records into wire lines (_wire.py) and writes them to the monitor's socket
and to <run_dir>/metrics/rank-N.jsonl, as ddpdesk-worker's telemetry does
(engine/telemetry/telemetry.cpp). Training never waits for the monitor: the socket is
non-blocking, and what it cannot take beyond a bound is dropped and counted, while the file
still gets every line. A record that finds the queue full is dropped and counted too (the sender
thread could not keep up: neither the socket nor the file gets it)."""

import collections
import math
import os
import socket
import sys
import threading
import time

from . import _phases
from . import _wire

QUEUE_LIMIT = 1 << 16  # records (one log() call each), as the worker's 65,536 messages
SOCKET_BACKLOG = 8 << 20  # bytes written but not yet taken by the monitor
WAKE_S = 0.05  # the sender thread's round: lag to the charts, and how often a stop file is seen
DRAIN_S = 2.0  # at exit, how long the queue may take to reach the monitor
RATE_WINDOW_S = 1.0  # samples/s is measured over about this much time
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = _wire.INT64_MIN, _wire.INT64_MAX


def _number(v):
    """v as a float: an int, a 0-d tensor, a numpy scalar, anything float() takes (infinite when
    too large); None for what float() refuses."""
    try:
        return float(v)
    except OverflowError:
        return math.inf
    except (TypeError, ValueError):
        return None


class Client:
    """One rank's connection. `settings`: _env.Settings. start=False leaves the sender thread
    unstarted (tests drive pump() themselves)."""

    def __init__(self, settings, start=True, queue_limit=QUEUE_LIMIT, wake_s=WAKE_S,
                 socket_backlog=SOCKET_BACKLOG, versions=None, stderr=None):
        self.s = settings
        self._stderr = stderr or sys.stderr
        self._queue = collections.deque()
        self._queue_limit = queue_limit
        self._wake_s = wake_s
        self._backlog_limit = socket_backlog
        self._versions = versions  # (v_min, v_max) for a test pretending to be another version
        self._t0 = time.monotonic()
        self._step = 0  # the last step logged
        self._epoch = 0
        self._samples = 0
        self._rates = collections.deque()  # (time, samples) of recent step messages
        self._names = {}  # gauge name as given -> its line up to the value ("": unusable)
        self.clock = _phases.StepClock()  # ddpdesk.phase(): the step breakdown
        self.phases = [_phases.Phase(self.clock, i) for i in range(len(_phases.PARTS))]
        self._step_prefix = (
            '{"type":"step","rank":%d,' % self.s.rank +
            '"epoch":%d,"step":%d,"loss":%s,"global_loss":%s,"samples":%d,"lr":%s,"time":%s,'
            '"samples_per_s":%s}')
        self.dropped_queue = 0  # messages refused at the queue (neither socket nor file got them)
        self.dropped_socket = 0  # messages the monitor did not take in time (the file has them)
        self.bad_values = 0  # losses and scalars whose value or name could not be sent
        self.stop_requested = False
        self.stop_reason = ""
        self.asked = False  # should_stop() was called at least once
        self.signals = 0  # stop signals taken
        self.failure = ""  # an uncaught exception's last line, sent as the rank's error
        self._closing = threading.Event()
        self._close_lock = threading.Lock()
        self._closed = False
        self._forked = False
        self._file = -1
        self._file_buf = []
        self._sock = None
        self._sock_buf = bytearray()
        self.connected = False
        self._said_gone = False
        self._thread = None
        self._connect_tried = False
        self._close_deadline = None
        self._open_file()
        self._push(("event", "started", "", "", 0, 0.0, 0, 0))
        if start and (self.s.monitor or self._file >= 0 or self.s.stop_file):
            self._thread = threading.Thread(target=self._run, name="ddpdesk-sender", daemon=True)
            self._thread.start()

    # ---- the calling thread's side: only appends to the queue ----

    def _push(self, record):
        if self._closed:
            return False
        if len(self._queue) >= self._queue_limit:
            self.dropped_queue += (
                (record[4] is not None) + len(record[6]) if record[0] == "log" else 1)
            return False
        self._queue.append(record)
        return True

    def log(self, step, loss, samples, epoch, global_loss, scalars):
        # Every value a float (or None) from here on: type checks first, conversions only for
        # what is not one already. The record goes on the queue as it is; the sender encodes.
        t = time.monotonic() - self._t0
        if step is None:
            step = self._step + 1
        if type(step) is not int or not INT64_MIN <= step <= INT64_MAX:
            step = _wire.integer(step, self._step + 1)
        self._step = step
        if epoch is not None:
            self._epoch = min(max(_wire.integer(epoch, self._epoch), 0), INT32_MAX)
        if samples is not None:
            if type(samples) is int and INT64_MIN <= samples <= INT64_MAX:
                self._samples = samples
            else:
                self._samples = _wire.integer(samples, self._samples)
        if loss is not None and type(loss) is not float:
            loss = _number(loss)
            if loss is None:
                self.bad_values += 1  # no step message: a loss float() refuses
        if global_loss is not None and type(global_loss) is not float:
            global_loss = _number(global_loss)
        for k, v in scalars.items():
            if type(v) is not float:
                scalars[k] = _number(v)
        times = self.clock.take(step) if loss is not None and self.clock.used else None
        queue = self._queue
        if len(queue) >= self._queue_limit or self._closed:
            if not self._closed:
                self.dropped_queue += (loss is not None) + len(scalars)
            return
        queue.append(
            ("log", t, step, self._epoch, loss, global_loss, scalars, self._samples, times))

    def event(self, name, path="", detail="", total_steps=0):
        t = time.monotonic() - self._t0
        self._push(("event", name, path, detail, total_steps, t, self._step, self._epoch))

    def eval(self, loss, accuracy, samples, step, epoch):
        step = self._step if step is None else _wire.integer(step, self._step)
        epoch = self._epoch if epoch is None else min(max(_wire.integer(epoch, 0), 0), INT32_MAX)
        self._push(("eval", time.monotonic() - self._t0, step, epoch, _number(loss),
                    None if accuracy is None else _number(accuracy), _wire.integer(samples, 0)))

    def request_stop(self, reason):
        """Once: the flag, and a "stopping" event for the monitor. True the first time."""
        if self.stop_requested:
            return False
        self.stop_reason = reason
        self.stop_requested = True
        self.event("stopping", detail=reason)
        return True

    def dropped(self):
        return self.dropped_queue + self.dropped_socket

    # ---- the sender thread's side ----

    def _open_file(self):
        if not self.s.run_dir:
            return
        path = os.path.join(self.s.run_dir, "metrics", "rank-%d.jsonl" % self.s.rank)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as e:
            self._say("cannot write its metrics file %s: %s; going on without it"
                      % (path, e.strerror or e))
            return
        first = ""
        # A rank killed mid-line left half a line: end it, so this hello is a line of its own
        # (read back, hence O_RDWR).
        size = os.lseek(fd, 0, os.SEEK_END)
        if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
            first = "\n"
        self._file = fd
        # The token stays off the disk (the monitor blanks it in what it records, too).
        self._file_buf.append((first + self._hello("") + "\n").encode())
        self._write_file()

    def _hello(self, token):
        line = _wire.hello(token, self.s.rank, self.s.world, os.getpid(), socket.gethostname(),
                           self.s.device)
        if self._versions:
            lo, hi = self._versions
            line = line.replace('"v":%d,"v_min":%d,"v_max":%d' % (
                _wire.VERSION, _wire.MIN_VERSION, _wire.MAX_VERSION),
                '"v":%d,"v_min":%d,"v_max":%d' % (hi, lo, hi), 1)
        return line

    def _say(self, what):
        try:
            print("ddpdesk[%d] %s" % (self.s.rank, what), file=self._stderr, flush=True)
        except (OSError, ValueError):
            pass

    def _connect(self):
        self._connect_tried = True
        if not self.s.monitor:
            return
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(5.0)
            sock.connect(self.s.monitor)
        except OSError as e:
            sock.close()
            self._say("cannot reach the monitor at %s: %s; the metrics file keeps every message"
                      % (self.s.monitor, e.strerror or e))
            return
        sock.setblocking(False)
        self._sock = sock
        self.connected = True
        self._sock_buf += (self._hello(self.s.token) + "\n").encode()

    def _run(self):
        while True:
            closing = self._closing.wait(self._wake_s)
            self.pump(self._close_deadline if closing else None)
            if closing:
                return

    def pump(self, deadline=None):
        """One round of the sender: the queue into lines, the lines out, the stop file looked at.
        With a deadline, waits for the socket to take its backlog until then."""
        if self._forked:
            return
        if not self._connect_tried:
            self._connect()
        lines = []
        queue = self._queue
        while queue:
            self._encode(queue.popleft(), lines)
        if lines:
            data = ("\n".join(lines) + "\n").encode("utf-8", "replace")
            if self._file >= 0:
                self._file_buf.append(data)
            if self._sock is not None:
                if len(self._sock_buf) > self._backlog_limit:
                    self.dropped_socket += len(lines)
                else:
                    self._sock_buf += data
        self._write_file()
        self._send(deadline)
        if self.s.stop_file and not self.stop_requested and os.path.exists(self.s.stop_file):
            self.request_stop("stop requested (stop file %s)" % self.s.stop_file)

    def _encode(self, r, out):
        rank = self.s.rank
        kind = r[0]
        if kind == "log":
            # The hot path, by hand: the lines _wire.step() and _wire.gauge() write, from
            # prefixes kept per rank and per name. Every value is a float or None (log() saw to
            # it); x - x == 0.0 is false for NaN and infinities alone.
            _, t, step, epoch, loss, global_loss, scalars, samples, times = r
            t_json = repr(t)
            if loss is not None:
                if global_loss is None and self.s.world == 1:
                    global_loss = loss  # one rank: its loss is the global one
                lr = scalars.get("lr")
                line = self._step_prefix % (
                    epoch, step, repr(loss) if loss - loss == 0.0 else "null",
                    repr(global_loss)
                    if global_loss is not None and global_loss - global_loss == 0.0 else "null",
                    samples,
                    repr(lr) if lr is not None and lr - lr == 0.0 else "null" if lr is not None
                    else "0.0", t_json, repr(self._rate(t, samples)))
                # The step breakdown (ddpdesk.phase), inside the step's object.
                out.append(line if times is None else
                           line[:-1] + ',"time_ms":' + _wire.time_ms(_phases.breakdown(times))
                           + "}")
            if scalars:
                suffix = ',"unit":"","time":%s,"step":%d}' % (t_json, step)
                names = self._names
                for name, value in scalars.items():
                    prefix = names.get(name)
                    if prefix is None:
                        prefix = self._gauge_prefix(name)
                    if not prefix or value is None:
                        self.bad_values += 1
                        continue
                    out.append(prefix + (repr(value) if value - value == 0.0 else "null") + suffix)
        elif kind == "event":
            _, name, path, detail, total, t, step, epoch = r
            out.append(_wire.event(rank, name, epoch, step, t, path=path, detail=detail,
                                   total_steps=total))
        elif kind == "eval":
            _, t, step, epoch, loss, accuracy, samples = r
            out.append(_wire.eval_(rank, epoch, step, loss, accuracy, samples, t))
        elif kind == "error":
            out.append(_wire.error(rank, r[1]))

    def _gauge_prefix(self, name):
        """A gauge line up to its value, for this name ("" when the name is unusable); kept for
        the first 4,096 names."""
        clean = _wire.gauge_name(name)
        prefix = "" if clean is None else '{"type":"gauge","rank":%d,"name":%s,"value":' % (
            self.s.rank, _wire.text(clean))
        if len(self._names) < 4096:
            self._names[name] = prefix
        return prefix

    def _rate(self, t, samples):
        """Global samples/s over about the last second of step messages (0 until two of them;
        a resumed count that went back starts over)."""
        rates = self._rates
        if rates and samples < rates[-1][1]:
            rates.clear()
        rates.append((t, samples))
        while len(rates) > 2 and t - rates[1][0] >= RATE_WINDOW_S:
            rates.popleft()
        t0, s0 = rates[0]
        return (samples - s0) / (t - t0) if t > t0 else 0.0

    def _write_file(self):
        if self._file < 0 or not self._file_buf:
            return
        data = b"".join(self._file_buf)
        self._file_buf = []
        view = memoryview(data)
        try:
            while view:  # whole lines in as few writes as the disk allows
                n = os.write(self._file, view)
                view = view[n:]
        except OSError:
            pass  # disk full or similar: training goes on, the socket still has the lines

    def _send(self, deadline):
        while self._sock is not None:
            if self._sock_buf:
                try:
                    n = self._sock.send(self._sock_buf)
                    del self._sock_buf[:n]
                    continue
                except BlockingIOError:
                    pass
                except OSError:
                    self._gone()
                    return
            else:
                # The monitor never writes; a readable socket means it closed the connection
                # (a refused hello: wrong token, another wire version, a world it does not run).
                try:
                    if self._sock.recv(1, socket.MSG_PEEK) == b"":
                        self._gone()
                        return
                except BlockingIOError:
                    pass
                except OSError:
                    self._gone()
                    return
            if not self._sock_buf or deadline is None or time.monotonic() >= deadline:
                return
            time.sleep(0.005)

    def _gone(self):
        lines = self._sock_buf.count(b"\n")
        self.dropped_socket += lines
        self._sock_buf = bytearray()
        try:
            self._sock.close()
        except OSError:
            pass
        self._sock = None
        self.connected = False
        if not self._said_gone and not self._closed:
            self._said_gone = True
            self._say("the monitor closed its connection (its log says why); training goes on"
                      + (" and the metrics file keeps every message" if self._file >= 0 else ""))

    # ---- the end ----

    def close(self, drain_s=DRAIN_S):
        """The rank's last word (finished, stopped, or the failure), then the queue drained for up
        to drain_s seconds; what the monitor did not take by then is dropped and counted."""
        with self._close_lock:  # at exit and from the signal thread, maybe at once
            self._close(drain_s)

    def _close(self, drain_s):
        if self._closed or self._forked:
            return
        if self.failure:
            self._push(("error", self.failure))
        else:
            self.event("stopped" if self.stop_requested else "finished",
                       detail=self.stop_reason if self.stop_requested else "")
        self._close_deadline = time.monotonic() + drain_s
        if self._thread is not None:
            self._closing.set()
            self._thread.join(drain_s + 0.5)
            if self._thread.is_alive():
                # The sender is stuck (a disk that does not answer): what it holds stays with it.
                self._closed = True
                self.dropped_queue += len(self._queue)
                self._report()
                return
        else:
            self.pump(self._close_deadline)
        self._closed = True
        if self._sock is not None:
            self.dropped_socket += self._sock_buf.count(b"\n")
            self._sock_buf = bytearray()
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        if self._file >= 0:
            os.close(self._file)
            self._file = -1
        self._report()

    def _report(self):
        if self.dropped_socket:
            self._say("%d message(s) for the monitor were dropped (it did not read them in time)"
                      "%s" % (self.dropped_socket,
                              "; the metrics file has every one" if self.s.run_dir else ""))
        if self.dropped_queue:
            self._say("%d message(s) were dropped before they were sent or written (log() was "
                      "called faster than the client could send)" % self.dropped_queue)
        if self.bad_values:
            self._say("%d value(s) could not be sent (float() refused them, or their name was "
                      "empty)" % self.bad_values)

    def after_fork_in_child(self):
        """A forked child (a DataLoader worker) is not the rank: it sends nothing, and closes its
        copies of the socket and file without writing what the parent had buffered."""
        self._forked = True
        self._closed = True
        self._queue = collections.deque()
        self._file_buf = []
        self._sock_buf = bytearray()
        if self._sock is not None:
            try:
                os.close(self._sock.detach())
            except OSError:
                pass
            self._sock = None
        if self._file >= 0:
            try:
                os.close(self._file)
            except OSError:
                pass
            self._file = -1
