"""Stop signals in a rank that imported ddpdesk (ddpdesk/_signals.py): SIGTERM and SIGINT blocked
in every thread started after the import and taken by one thread of the client's; the first sets
should_stop() and the script ends by itself, a second exits at once (128 + the signal), a script
that never asks is ended by the first. The stop file asks too. A forked child (a DataLoader
worker: torch's own, with num_workers=2) and a process the rank execs that imports ddpdesk get
Python's behaviour back."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from client_test_util import PYTHON_DIR, run, start, strict_lines

sys.path.insert(0, PYTHON_DIR)
from ddpdesk import _signals  # noqa: E402


def alive(pid):
    """Whether a process runs (a zombie does not: its reaper is init, outside the test)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# A rank's loop: it says "ready" once it asked should_stop() (or, with ASK=0, once it logged).
LOOP = """
    import os, sys, time, threading
    import ddpdesk
    ask = os.environ.get("ASK", "1") == "1"
    n = 0
    while True:
        n += 1
        ddpdesk.log(step=n, loss=1.0 / n, samples=n * 8)
        if ask and ddpdesk.should_stop():
            break
        if n == 1:
            print("ready", flush=True)
        time.sleep(0.002)
    print("stopped at", n, flush=True)
    if os.environ.get("LINGER") == "1":
        time.sleep(60)  # a script slow to stop: the second signal must not wait for it
    time.sleep(float(os.environ.get("LINGER_S", "0")))  # its checkpoint, say
"""


class StopSignals(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = dict(DDPDESK_RUN_DIR=self.tmp.name, RANK=0, WORLD_SIZE=1)

    def tearDown(self):
        self.tmp.cleanup()

    def events(self):
        lines = strict_lines(os.path.join(self.tmp.name, "metrics", "rank-0.jsonl"))
        return [(l["event"], l.get("detail", "")) for l in lines if l["type"] == "event"]

    def started(self, **extra):
        p = start(LOOP, **dict(self.env, **extra))
        self.assertEqual(p.stdout.readline().strip(), "ready")
        return p

    def test_sigterm_sets_should_stop_and_the_script_ends_itself(self):
        p = self.started()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("stopped at", out)
        self.assertEqual(self.events(), [("started", ""),
                                         ("stopping", "stop requested by SIGTERM"),
                                         ("stopped", "stop requested by SIGTERM")])

    def test_sigint_too(self):
        p = self.started()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("KeyboardInterrupt", err)
        self.assertIn(("stopped", "stop requested by SIGINT"), self.events())

    def test_second_signal_exits_at_once(self):
        # A person's second request: from another process than the rank's parent (which asks
        # once), and later than the half second in which a repeat is the same request.
        p = self.started(LINGER=1)
        p.send_signal(signal.SIGTERM)
        self.assertIn("stopped at", p.stdout.readline())
        time.sleep(0.6)
        t = time.monotonic()
        subprocess.run(["kill", "-TERM", str(p.pid)], check=True)
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM)
        self.assertLess(time.monotonic() - t, 20)  # not the 60 s the script would linger

    def test_the_parents_repeat_is_the_same_request(self):
        # Linux sends the parent-death SIGTERM once for each thread of a dying parent that hands
        # the rank on; a launcher asks once. A second SIGTERM from the parent stops nothing more:
        # the script ends by itself, gracefully.
        p = self.started(LINGER_S=2)
        p.send_signal(signal.SIGTERM)
        self.assertIn("stopped at", p.stdout.readline())
        time.sleep(0.6)  # past the half second: only the sender makes it a repeat
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(self.events()[-1], ("stopped", "stop requested by SIGTERM"))

    def test_repeats(self):
        r = _signals.Repeats(parent=100)
        self.assertFalse(r.same(signal.SIGTERM, 200, 10.0))  # the first
        self.assertTrue(r.same(signal.SIGTERM, 200, 10.3))   # again within half a second
        self.assertFalse(r.same(signal.SIGTERM, 200, 11.0))  # a second request
        self.assertFalse(r.same(signal.SIGINT, 0, 11.1))     # another signal
        self.assertTrue(r.same(signal.SIGINT, 0, 11.2))
        self.assertTrue(r.same(signal.SIGTERM, 100, 20.0))   # from the parent: always

    def test_script_that_never_asks_ends_on_the_first_signal(self):
        p = self.started(ASK=0)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM)
        # Its last word was written first.
        self.assertEqual(self.events()[-1], ("stopped", "stop requested by SIGTERM"))

    def test_stop_file(self):
        stop = os.path.join(self.tmp.name, "stop-requested")
        p = self.started(DDPDESK_STOP_FILE=stop)
        open(stop, "w").close()
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn(("stopped", "stop requested (stop file %s)" % stop), self.events())

    def test_stop_on_the_other_ranks_vote(self):
        rc, out, err = run("""
            import ddpdesk
            ddpdesk.log(step=1, loss=0.5)
            assert not ddpdesk.should_stop()
            ddpdesk.request_stop()
            assert ddpdesk.should_stop()
        """, **self.env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.events()[-2:], [("stopping", "stopped with the other ranks"),
                                              ("stopped", "stopped with the other ranks")])

    def test_stop_file_before_the_rank_starts(self):
        stop = os.path.join(self.tmp.name, "stop-requested")
        open(stop, "w").close()
        rc, out, err = run("""
            import ddpdesk
            assert ddpdesk.should_stop()
            print("ok")
        """, DDPDESK_STOP_FILE=stop, **self.env)
        self.assertEqual((rc, out.strip()), (0, "ok"), err)

    def test_threads_started_after_the_import_block_the_signals(self):
        rc, out, err = run("""
            import signal, threading
            import ddpdesk
            names = [t.name for t in threading.enumerate()]
            assert "ddpdesk-signals" in names, names
            masks = []
            t = threading.Thread(
                target=lambda: masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
            t.start(); t.join()
            assert {signal.SIGTERM, signal.SIGINT} <= masks[0], masks
            assert {signal.SIGTERM, signal.SIGINT} <= signal.pthread_sigmask(signal.SIG_BLOCK, [])
            print("ok")
        """, **self.env)
        self.assertEqual((rc, out.strip(), err), (0, "ok", ""))

    def test_late_import_is_named(self):
        rc, out, err = run("""
            import threading, time
            threading.Thread(target=time.sleep, args=(1,), daemon=True).start()
            import ddpdesk
        """, **self.env)
        self.assertEqual(rc, 0)
        self.assertIn("imported after 1 other thread(s) started", err)
        self.assertEqual(err.count("\n"), 1)

    def test_forked_child_takes_sigterm_as_python_does(self):
        p = start("""
            import os, signal, sys, time
            import ddpdesk
            pid = os.fork()
            if pid == 0:
                ddpdesk.log(step=1, loss=9.0)  # nothing: a forked child is not the rank
                assert not signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
                time.sleep(60)
                os._exit(0)
            time.sleep(0.5)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status), flush=True)
            ddpdesk.log(step=1, loss=0.5)
        """, **self.env)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.strip(), str(-signal.SIGTERM))
        lines = strict_lines(os.path.join(self.tmp.name, "metrics", "rank-0.jsonl"))
        self.assertEqual([l["loss"] for l in lines if l["type"] == "step"], [0.5])
        self.assertEqual(len([l for l in lines if l["type"] == "hello"]), 1)

    def test_process_the_rank_execs_is_not_the_rank(self):
        # A spawned child re-imports the script, and ddpdesk with it: it stays quiet, and the
        # block of SIGTERM it inherited through exec is lifted.
        p = start("""
            import os, signal, subprocess, sys
            import ddpdesk
            child = subprocess.Popen([sys.executable, "-c",
                "import ddpdesk, signal, time; assert not ddpdesk.active(); "
                "assert ddpdesk.run_dir() is not None; "
                "assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, []); "
                "print('child ready', flush=True); time.sleep(60)"],
                stdout=subprocess.PIPE, text=True)
            assert child.stdout.readline().strip() == "child ready"
            child.send_signal(signal.SIGTERM)
            print(child.wait(), flush=True)
        """, **self.env)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.strip(), str(-signal.SIGTERM))
        lines = strict_lines(os.path.join(self.tmp.name, "metrics", "rank-0.jsonl"))
        self.assertEqual(len([l for l in lines if l["type"] == "hello"]), 1)

    def test_dataloader_workers_end_with_the_rank(self):
        # A DataLoader with two forked workers: the rank stops on SIGTERM and its workers, which
        # got Python's signal behaviour back when forked, are gone when it exits.
        if subprocess.run([sys.executable, "-c", "import torch"],
                          capture_output=True).returncode != 0:
            self.skipTest("needs python3-torch")
        p = start("""
            import ddpdesk
            import os, torch
            from torch.utils.data import DataLoader, TensorDataset
            data = TensorDataset(torch.randn(100000, 8))
            loader = DataLoader(data, batch_size=4, num_workers=2)
            n = 0
            for (x,) in loader:
                n += 1
                # Asked before "ready" is said: the client takes SIGTERM once the script has
                # asked should_stop() (until then Python's default ends it, exit 143).
                if ddpdesk.should_stop():
                    break
                if n == 1:
                    kids = open("/proc/self/task/%d/children" % os.getpid()).read().split()
                    print("ready", *kids, flush=True)
            del loader
            print("stopped", n, flush=True)
        """, **self.env)
        line = p.stdout.readline().split()
        self.assertEqual(line[0], "ready")
        workers = [int(pid) for pid in line[1:]]
        self.assertEqual(len(workers), 2)
        for w in workers:  # the block lifted in the forked workers: SIGTERM ends them as before
            with open("/proc/%d/status" % w) as f:
                blocked = int([l for l in f if l.startswith("SigBlk:")][0].split()[1], 16)
            self.assertEqual(blocked & (1 << (signal.SIGTERM - 1) | 1 << (signal.SIGINT - 1)), 0)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("stopped", out)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(w) for w in workers):
            time.sleep(0.1)
        self.assertFalse(any(alive(w) for w in workers), workers)

    def test_uncaught_exception_is_the_ranks_error(self):
        rc, out, err = run("""
            import ddpdesk
            ddpdesk.log(step=1, loss=0.5)
            raise RuntimeError("out of memory at step 1")
        """, **self.env)
        self.assertEqual(rc, 1)
        self.assertIn("Traceback", err)  # Python's own report still comes
        lines = strict_lines(os.path.join(self.tmp.name, "metrics", "rank-0.jsonl"))
        self.assertEqual((lines[-1]["type"], lines[-1]["message"]),
                         ("error", "RuntimeError: out of memory at step 1"))

    def test_bad_environment_is_one_line_and_exit_2(self):
        rc, out, err = run("import ddpdesk\nprint('not reached')", DDPDESK_RUN_DIR=self.tmp.name,
                           RANK="one", WORLD_SIZE=2)
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, "ddpdesk: invalid environment RANK='one': must be an integer from "
                              "0 to 1048576\n")
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "metrics")))

    def test_torch_threads_inherit_the_block(self):
        # Debian's python3-torch: its intra-op threads start after the import and never receive
        # the signal; the script stops by itself in the middle of matrix products.
        if subprocess.run([sys.executable, "-c", "import torch"],
                          capture_output=True).returncode != 0:
            self.skipTest("needs python3-torch")
        p = start("""
            import ddpdesk
            import torch
            torch.set_num_threads(2)
            a = torch.randn(256, 256)
            n = 0
            while not ddpdesk.should_stop():
                n += 1
                a = torch.tanh(a @ a)
                if n == 1:
                    print("ready", flush=True)
            print("stopped", n, flush=True)
        """, **self.env)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("stopped", out)
        self.assertNotIn("imported after", err)


if __name__ == "__main__":
    unittest.main()
