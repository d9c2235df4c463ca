"""The hang doctor's side in the client (ddpdesk/_stacks.py): a rank inside a run directory
registers faulthandler on its signal with <run_dir>/python-stacks/rank-N.txt, whose first line
names its pid and the signal; the signal appends every thread's stack and the rank runs on. Outside
ddpdesk, and in a process the rank started, nothing is registered."""

import os
import signal
import tempfile
import time
import unittest

from client_test_util import start

HELD = """
    import time
    import ddpdesk

    def load_shard():
        print("holding", flush=True)
        for _ in range(3000):
            time.sleep(0.01)
        print("still here", flush=True)

    class Shards:
        def __getitem__(self, i):
            load_shard()

    Shards()[0]
"""


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class Stacks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "python-stacks", "rank-1.txt")

    def tearDown(self):
        self.tmp.cleanup()

    def read(self):
        with open(self.path, encoding="utf-8") as f:
            return f.read()

    def test_the_signal_appends_every_threads_stack_and_the_rank_runs_on(self):
        p = start(HELD, DDPDESK_RUN_DIR=self.tmp.name, RANK=1, WORLD_SIZE=2)
        try:
            self.assertEqual(p.stdout.readline(), "holding\n")
            sig = int(signal.SIGRTMIN) + 4
            self.assertEqual(self.read(), "ddpdesk faulthandler pid=%d signal=%d\n" % (p.pid, sig))
            os.kill(p.pid, sig)
            self.assertTrue(wait_for(lambda: "in load_shard" in self.read()), self.read())
            dump = self.read()
            self.assertIn("in __getitem__", dump)
            self.assertIn("in <module>", dump)
            # Every thread: the client's sender and signal threads are there too.
            self.assertGreaterEqual(dump.count("Thread 0x") + dump.count("thread 0x"), 2, dump)
            time.sleep(0.2)
            self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
            # A second dump is appended after the first.
            os.kill(p.pid, sig)
            self.assertTrue(wait_for(lambda: self.read().count("in load_shard") == 2), self.read())
            self.assertIsNone(p.poll())
        finally:
            p.kill()
            p.communicate()

    def test_nothing_outside_ddpdesk_or_in_a_process_the_rank_started(self):
        # Nothing registered: the signal keeps its default action and ends the process.
        sig = int(signal.SIGRTMIN) + 4
        for env in (dict(RANK=1, WORLD_SIZE=2),
                    dict(DDPDESK_RUN_DIR=self.tmp.name, RANK=1, WORLD_SIZE=2,
                         DDPDESK_CLIENT_PID=1)):
            p = start("import time, ddpdesk\nprint('ready', flush=True)\ntime.sleep(30)\n", **env)
            self.assertEqual(p.stdout.readline(), "ready\n")
            os.kill(p.pid, sig)
            p.communicate(timeout=60)
            self.assertEqual(p.returncode, -sig, env)
            self.assertFalse(os.path.exists(self.path))


if __name__ == "__main__":
    unittest.main()
