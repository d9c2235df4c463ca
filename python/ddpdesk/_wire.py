"""The wire format's lines as ddpdesk-worker writes them (docs/wire-format.md): one JSON object per
line, the same key order, non-finite numbers as null. Built by hand rather than with json.dumps
for every message: this runs for every log() call, on the client's sender thread, and a step
message plus a few gauges should cost that thread microseconds, not tens of them."""

import json
import math

# The version this client writes and the range it reads; the monitor refuses a hello whose range
# does not overlap its own, and names both ranges in its log.
VERSION = 1
MIN_VERSION = 1
MAX_VERSION = 1
# What the decoder accepts (engine/protocol/wire.h): a gauge name of 1 to 128 bytes, a line of
# at most 64 KiB, integers that fit in 64 bits.
MAX_GAUGE_NAME = 128
MAX_LINE_BYTES = 64 * 1024
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def number(x):
    """A JSON number, or null for NaN and infinities (and for what float() refuses)."""
    if type(x) is float:
        return repr(x) if x - x == 0.0 else "null"  # inf - inf and NaN - NaN are NaN
    try:
        f = float(x)
    except OverflowError:  # an int too large for a double: infinite, so null
        return "null"
    except (TypeError, ValueError):
        return "null"
    return repr(f) if math.isfinite(f) else "null"


def integer(x, default=0):
    """An int within 64 bits (clamped when beyond); `default` when x is no finite number."""
    if type(x) is not int:
        try:
            f = float(x)
        except (OverflowError, TypeError, ValueError):
            f = math.nan
        x = int(f) if math.isfinite(f) else int(default)
    return min(max(x, INT64_MIN), INT64_MAX)


MAX_TEXT = 4096  # free text (a detail, an error message) is cut to this many characters


def text(s, limit=MAX_TEXT):
    """A JSON string of valid UTF-8: a lone surrogate (which strict decoders refuse) becomes '?'."""
    s = str(s)[:limit]
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-8", "replace").decode("utf-8")
    return json.dumps(s, ensure_ascii=False)


def gauge_name(name):
    """The name as the decoder accepts it (1 to 128 bytes of UTF-8, cut at a character), or None
    when nothing is left of it."""
    raw = str(name).encode("utf-8", "replace")
    if len(raw) > MAX_GAUGE_NAME:
        raw = raw[:MAX_GAUGE_NAME]
    name = raw.decode("utf-8", "ignore")  # a character cut in half goes
    return name or None


def hello(token, rank, world, pid, host, device):
    return (
        '{"type":"hello","v":%d,"v_min":%d,"v_max":%d,"token":%s,"rank":%d,"world":%d,'
        '"pid":%d,"host":%s,"device":%s}'
        % (VERSION, MIN_VERSION, MAX_VERSION, text(token), rank, world, pid, text(host),
           text(device))
    )


def step(rank, epoch, step_, loss, global_loss, samples, lr, time_json, samples_per_s):
    """time_json: the time already as JSON (number(time)), shared with the step's gauges."""
    return (
        '{"type":"step","rank":%d,"epoch":%d,"step":%d,"loss":%s,"global_loss":%s,"samples":%d,'
        '"lr":%s,"time":%s,"samples_per_s":%s}'
        % (rank, epoch, step_, number(loss), number(global_loss), samples, number(lr),
           time_json, number(samples_per_s))
    )


def time_ms(times):
    """A step's "time_ms" object from _phases.breakdown()'s tuple (comm None: unmeasured, left
    out). Every figure is finite and not negative."""
    data, forward, backward, comm, optimizer, other, step_ms, steps = times
    return '{"data":%r,"forward":%r,"backward":%r,%s"optimizer":%r,"other":%r,"step":%r,' \
        '"steps":%d}' % (data, forward, backward, "" if comm is None else '"comm":%r,' % comm,
                         optimizer, other, step_ms, steps)


def gauge(rank, name_json, value, time_json, step_, unit_json='""'):
    """name_json, time_json, unit_json: already JSON (text(gauge_name(...)), number(time)), kept
    by the caller for the lines that share them."""
    return '{"type":"gauge","rank":%d,"name":%s,"value":%s,"unit":%s,"time":%s,"step":%d}' % (
        rank, name_json, number(value), unit_json, time_json, step_)


def event(rank, name, epoch, step_, time, path="", detail="", total_steps=0):
    line = '{"type":"event","rank":%d,"event":%s,"epoch":%d,"step":%d,"time":%s' % (
        rank, text(name), epoch, step_, number(time))
    if path:
        line += ',"path":' + text(path)
    if detail:
        line += ',"detail":' + text(detail)
    if total_steps:
        line += ',"total_steps":%d' % total_steps
    return line + "}"


def eval_(rank, epoch, step_, loss, accuracy, samples, time):
    line = '{"type":"eval","rank":%d,"epoch":%d,"step":%d,"loss":%s,"samples":%d,"time":%s' % (
        rank, epoch, step_, number(loss), samples, number(time))
    if accuracy is not None:
        line += ',"accuracy":' + number(accuracy)
    return line + "}"


def error(rank, message):
    return '{"type":"error","rank":%d,"message":%s}' % (rank, text(message))
