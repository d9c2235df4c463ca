"""The client's sender (ddpdesk/_client.py) driven by hand: the bounded queue and its drop count,
the metrics file's lines (the worker's format, hello first), odd values and names turned into
lines the wire decoder accepts, and the socket: hello with the token, a monitor that does not
read (dropped and counted, the file keeps every line), a monitor that hangs up."""

import io
import json
import math
import os
import socket
import tempfile
import threading
import time
import unittest

from client_test_util import PYTHON_DIR, strict_lines  # noqa: F401 (puts the client on the path)
import sys

sys.path.insert(0, PYTHON_DIR)
from ddpdesk import _client, _env, _wire  # noqa: E402


def settings(**kw):
    s = _env.Settings(rank=kw.pop("rank", 1), world=kw.pop("world", 2))
    for k, v in kw.items():
        setattr(s, k, v)
    return s


class Monitor:
    """A Unix socket that accepts one connection and keeps what it reads, or reads nothing."""

    def __init__(self, directory, read=True):
        self.path = os.path.join(directory, "m.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.data = b""
        self.conn = None
        self._read = read
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        self.conn, _ = self.server.accept()
        if not self._read:
            return
        while True:
            chunk = self.conn.recv(65536)
            if not chunk:
                return
            self.data += chunk

    def lines(self):
        return [json.loads(l) for l in self.data.decode().splitlines()]

    def hang_up(self):
        self.conn.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.server.close()
        if self.conn:
            self.conn.close()


class Sender(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.err = io.StringIO()

    def tearDown(self):
        self.tmp.cleanup()

    def client(self, **kw):
        opts = {k: kw.pop(k) for k in ("queue_limit", "socket_backlog", "versions") if k in kw}
        return _client.Client(settings(**kw), start=False, stderr=self.err, **opts)

    def file_lines(self, rank=1):
        return strict_lines(os.path.join(self.dir, "metrics", "rank-%d.jsonl" % rank))

    def test_file_has_the_workers_lines(self):
        c = self.client(run_dir=self.dir)
        c.log(1, 0.75, 64, 0, None, {"lr": 0.01, "grad_norm": 2})
        c.log(None, 0.5, 128, None, None, {})  # step: the previous one + 1
        c.log(None, None, None, None, None, {"tokens_per_s": 1000})  # scalars only
        c.eval(0.4, 0.875, 1000, None, None)
        c.event("checkpoint", path="/x/ck.pt")
        c.close()
        lines = self.file_lines()
        self.assertEqual([l["type"] for l in lines],
                         ["hello", "event", "step", "gauge", "gauge", "step", "gauge", "eval",
                          "event", "event"])
        hello = lines[0]
        self.assertEqual((hello["v"], hello["v_min"], hello["v_max"]), (1, 1, 1))
        self.assertEqual((hello["rank"], hello["world"], hello["pid"], hello["device"]),
                         (1, 2, os.getpid(), "cpu"))
        self.assertEqual(hello["token"], "")  # the token stays off the disk
        self.assertEqual(lines[1]["event"], "started")
        step = lines[2]
        for field in ("rank", "epoch", "step", "loss", "global_loss", "samples", "lr", "time",
                      "samples_per_s"):
            self.assertIn(field, step)
        self.assertEqual((step["step"], step["loss"], step["samples"], step["lr"]),
                         (1, 0.75, 64, 0.01))
        self.assertIsNone(step["global_loss"])  # two ranks: the client does not know it
        self.assertEqual([(g["name"], g["value"], g["step"]) for g in lines[3:5]],
                         [("lr", 0.01, 1), ("grad_norm", 2.0, 1)])
        self.assertEqual((lines[5]["step"], lines[5]["samples"]), (2, 128))
        self.assertEqual((lines[6]["name"], lines[6]["step"]), ("tokens_per_s", 3))
        self.assertEqual((lines[7]["loss"], lines[7]["accuracy"], lines[7]["step"]),
                         (0.4, 0.875, 3))
        self.assertEqual((lines[8]["event"], lines[8]["path"]), ("checkpoint", "/x/ck.pt"))
        self.assertEqual(lines[9]["event"], "finished")
        self.assertEqual(c.dropped(), 0)
        self.assertEqual(self.err.getvalue(), "")

    def test_hot_path_writes_what_the_wire_module_writes(self):
        # The sender builds step and gauge lines by hand (the hot path); _wire's functions are
        # the reference for the same values.
        c = self.client(run_dir=self.dir)
        c.log(3, 0.1 + 0.2, 192, 2, math.inf, {"lr": 1e-3, "g n": math.nan})
        c.close()
        step, lr, gn = self.file_lines()[2:5]
        t = _wire.number(step["time"])
        self.assertEqual(json.loads(_wire.step(1, 2, 3, 0.1 + 0.2, math.inf, 192, 1e-3, t, 0.0)),
                         step)
        self.assertEqual(json.loads(_wire.gauge(1, _wire.text("lr"), 1e-3, t, 3)), lr)
        self.assertEqual(json.loads(_wire.gauge(1, _wire.text("g n"), math.nan, t, 3)), gn)
        with open(os.path.join(self.dir, "metrics", "rank-1.jsonl")) as f:
            raw = f.read().splitlines()
        self.assertEqual(raw[2], _wire.step(1, 2, 3, 0.1 + 0.2, math.inf, 192, 1e-3, t, 0.0))
        self.assertEqual(raw[3], _wire.gauge(1, _wire.text("lr"), 1e-3, t, 3))

    def test_single_rank_loss_is_the_global_loss(self):
        c = self.client(run_dir=self.dir, rank=0, world=1)
        c.log(1, 0.25, 8, None, None, {})
        c.close()
        self.assertEqual(self.file_lines(rank=0)[2]["global_loss"], 0.25)

    def test_stop_then_close_says_stopped(self):
        c = self.client(run_dir=self.dir)
        self.assertTrue(c.request_stop("stop requested by SIGTERM"))
        self.assertFalse(c.request_stop("again"))
        c.close()
        events = [(l["event"], l.get("detail")) for l in self.file_lines() if l["type"] == "event"]
        self.assertEqual(events, [("started", None), ("stopping", "stop requested by SIGTERM"),
                                  ("stopped", "stop requested by SIGTERM")])

    def test_failure_is_the_last_word(self):
        c = self.client(run_dir=self.dir)
        c.failure = "RuntimeError: boom"
        c.close()
        last = self.file_lines()[-1]
        self.assertEqual((last["type"], last["message"]), ("error", "RuntimeError: boom"))

    def test_half_line_left_by_a_killed_rank_is_ended(self):
        os.makedirs(os.path.join(self.dir, "metrics"))
        with open(os.path.join(self.dir, "metrics", "rank-1.jsonl"), "w") as f:
            f.write('{"type":"hello","v":1,"token":"","rank":1,"world":2,"pid":1,"host":"h",'
                    '"device":"cpu"}\n{"type":"st')
        c = self.client(run_dir=self.dir)
        c.close()
        with open(os.path.join(self.dir, "metrics", "rank-1.jsonl")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[1], '{"type":"st')
        self.assertEqual(json.loads(lines[2])["type"], "hello")

    def test_queue_is_bounded_and_counts_what_it_drops(self):
        c = self.client(run_dir=self.dir, queue_limit=5)  # "started" takes one place
        for i in range(10):
            c.log(i + 1, 0.5, i, None, None, {"a": 1.0, "b": 2.0})
        # 4 records fitted; 6 did not, each a step and two gauges.
        self.assertEqual(c.dropped_queue, 6 * 3)
        c.log(None, None, None, None, None, {"only": 1.0})
        self.assertEqual(c.dropped_queue, 6 * 3 + 1)
        c.pump()
        c.log(20, 0.5, 0, None, None, {})  # room again
        c.close()
        steps = [l["step"] for l in self.file_lines() if l["type"] == "step"]
        self.assertEqual(steps, [1, 2, 3, 4, 20])
        self.assertEqual(c.dropped(), 19)
        self.assertIn("19 message(s) were dropped", self.err.getvalue())

    def test_odd_values_and_names(self):
        c = self.client(run_dir=self.dir)

        class Tensor:  # what float() takes, like a 0-d tensor
            def __float__(self):
                return 0.125

        scalars = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf,
                   "big": 1.7976931348623157e308,
                   "bigint": 10**400, "tiny": 5e-324, "neg0": -0.0, "flag": True,
                   "tensor": Tensor(), "text": "0.5", "bad": "abc", "obj": object(), "none": None,
                   "": 1.0, "x" * 300: 2.0, "é" * 100: 3.0, "lone\ud800": 4.0,
                   'quote"back\\slash\nnewline\x00nul': 5.0, "sp ace/slash": 6.0}
        c.log(2**70, math.inf, 2**80, -5, math.nan, dict(scalars))
        c.log(float("nan"), Tensor(), float("inf"), None, None, {})
        c.log("7", None, "abc", None, None, {"ok": 1.0})
        c.log(None, "not a loss", None, None, None, {})
        c.close()
        lines = self.file_lines()  # strict: no NaN or Infinity anywhere
        with open(os.path.join(self.dir, "metrics", "rank-1.jsonl"), "rb") as f:
            for raw in f:
                self.assertLess(len(raw), _wire.MAX_LINE_BYTES)
                raw.decode("utf-8")  # valid UTF-8
        step = [l for l in lines if l["type"] == "step"]
        self.assertEqual(step[0]["step"], _wire.INT64_MAX)  # clamped to 64 bits
        self.assertEqual(step[0]["samples"], _wire.INT64_MAX)
        self.assertEqual(step[0]["epoch"], 0)  # negative epochs are not epochs
        self.assertIsNone(step[0]["loss"])
        self.assertIsNone(step[0]["global_loss"])
        # A step that is no number: the previous one + 1 (and clamped ones stay in range).
        self.assertEqual(step[1]["step"], _wire.INT64_MAX)
        self.assertEqual(step[1]["loss"], 0.125)
        self.assertEqual(step[1]["samples"], _wire.INT64_MAX)  # kept, inf is no count
        gauges = {l["name"]: l["value"] for l in lines if l["type"] == "gauge"}
        for name in ("nan", "inf", "ninf", "bigint"):
            self.assertIsNone(gauges[name], name)
        self.assertEqual(gauges["big"], 1.7976931348623157e308)
        self.assertEqual(gauges["tiny"], 5e-324)
        self.assertEqual(gauges["flag"], 1.0)
        self.assertEqual(gauges["tensor"], 0.125)
        self.assertEqual(gauges["text"], 0.5)
        self.assertEqual(gauges["x" * 128], 2.0)  # cut to 128 bytes
        self.assertEqual(gauges["é" * 64], 3.0)  # 2 bytes each: cut at a character
        self.assertEqual(gauges["lone?"], 4.0)
        self.assertEqual(gauges['quote"back\\slash\nnewline\x00nul'], 5.0)
        self.assertEqual(gauges["sp ace/slash"], 6.0)
        for name in gauges:
            self.assertTrue(1 <= len(name.encode()) <= _wire.MAX_GAUGE_NAME, name)
        self.assertNotIn("bad", gauges)
        self.assertNotIn("obj", gauges)
        self.assertNotIn("", gauges)
        self.assertEqual(c.bad_values, 5)  # bad, obj, none, the empty name, "not a loss"
        self.assertIn("5 value(s) could not be sent", self.err.getvalue())
        # A step given as text still counts; samples that are no number keep the last count.
        ok = [l for l in lines if l["type"] == "gauge" and l["name"] == "ok"]
        self.assertEqual(ok[0]["step"], 7)

    def test_monitor_gets_hello_with_token_then_the_lines(self):
        m = Monitor(self.dir)
        c = self.client(monitor=m.path, token="secret-token", run_dir=self.dir)
        c.log(1, 0.5, 8, None, None, {"lr": 0.1})
        c.pump()
        self.assertTrue(c.connected)
        c.close()
        m._thread.join(10)
        lines = m.lines()
        self.assertEqual(lines[0]["type"], "hello")
        self.assertEqual(lines[0]["token"], "secret-token")
        self.assertEqual([l["type"] for l in lines[1:]], ["event", "step", "gauge", "event"])
        self.assertEqual(lines[1:], self.file_lines()[1:])  # the same lines both ways
        m.close()

    def test_versions_in_the_hello(self):
        m = Monitor(self.dir)
        c = self.client(monitor=m.path, versions=(2, 3))
        c.close()
        m._thread.join(10)
        hello = m.lines()[0]
        self.assertEqual((hello["v"], hello["v_min"], hello["v_max"]), (3, 2, 3))
        m.close()

    def test_monitor_that_does_not_read(self):
        m = Monitor(self.dir, read=False)
        c = self.client(monitor=m.path, run_dir=self.dir, socket_backlog=1 << 16)
        name = "n" * 100
        n = 0
        deadline = time.monotonic() + 60
        while c.dropped_socket == 0 and time.monotonic() < deadline:
            for _ in range(100):
                n += 1
                c.log(n, 0.5, n, None, None, {name: 1.0})
            c.pump()
        self.assertGreater(c.dropped_socket, 0)
        self.assertTrue(c.connected)
        t = time.monotonic()
        c.close(drain_s=0.5)  # the bound holds though the monitor never reads
        self.assertLess(time.monotonic() - t, 10)
        steps = [l["step"] for l in self.file_lines() if l["type"] == "step"]
        self.assertEqual(steps, list(range(1, n + 1)))  # the file has every one
        self.assertIn("message(s) for the monitor were dropped", self.err.getvalue())
        self.assertIn("the metrics file has every one", self.err.getvalue())
        m.close()

    def test_monitor_that_hangs_up(self):
        m = Monitor(self.dir)
        c = self.client(monitor=m.path, run_dir=self.dir)
        c.pump()
        m._thread.join(0.2)
        m.hang_up()
        deadline = time.monotonic() + 30
        while c.connected and time.monotonic() < deadline:
            c.log(None, 0.5, 0, None, None, {})
            c.pump()
            time.sleep(0.01)
        self.assertFalse(c.connected)
        self.assertIn("the monitor closed its connection", self.err.getvalue())
        c.log(None, 0.25, 0, None, None, {})
        c.close()
        self.assertEqual([l["loss"] for l in self.file_lines() if l["type"] == "step"][-1], 0.25)
        m.close()

    def test_unreachable_monitor(self):
        c = self.client(monitor=os.path.join(self.dir, "nobody.sock"), run_dir=self.dir)
        c.log(1, 0.5, 8, None, None, {})
        c.close()
        self.assertIn("cannot reach the monitor", self.err.getvalue())
        self.assertEqual(len([l for l in self.file_lines() if l["type"] == "step"]), 1)

    def test_unwritable_run_dir(self):
        path = os.path.join(self.dir, "file")
        open(path, "w").close()
        c = self.client(run_dir=path)  # a file, not a directory
        c.log(1, 0.5, 8, None, None, {})
        c.close()
        self.assertIn("cannot write its metrics file", self.err.getvalue())
        self.assertEqual(self.err.getvalue().count("\n"), 1)


if __name__ == "__main__":
    unittest.main()
