"""Outside ddpdesk (none of its variables set) every call is a no-op: nothing is started, written
or blocked, and SIGTERM ends the script as it ends any Python program. (What a call costs there is
a figure of tests/bench/bench_python_client.py, not a test.)"""

import os
import signal
import tempfile
import unittest

from client_test_util import run, start


class OutsideDdpdesk(unittest.TestCase):
    def test_calls_do_nothing(self):
        with tempfile.TemporaryDirectory() as cwd:
            rc, out, err = run("""
                import os, signal, threading
                import ddpdesk
                assert not ddpdesk.active()
                assert ddpdesk.run_dir() is None
                assert ddpdesk.should_stop() is False
                assert ddpdesk.rank() == 0 and ddpdesk.world_size() == 1
                ddpdesk.log(step=1, loss=0.5, samples=8, lr=0.1)
                ddpdesk.log(loss=float("nan"), **{"": object()})
                ddpdesk.log_eval(0.1, 0.9)
                ddpdesk.set_total_steps(10)
                ddpdesk.checkpoint("/nowhere")
                assert ddpdesk.dropped() == 0
                ddpdesk.close()
                assert threading.active_count() == 1, threading.enumerate()
                assert len(os.listdir("/proc/self/task")) == 1
                assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
                assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
                assert "DDPDESK_CLIENT_PID" not in os.environ
                print("ok", os.listdir("."))
            """, cwd=cwd)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), "ok []")
        self.assertEqual(err, "")

    def test_torchrun_rank_without_ddpdesk_is_outside(self):
        # torchrun's variables alone do not make a ddpdesk rank.
        rc, out, err = run("""
            import ddpdesk
            assert not ddpdesk.active() and ddpdesk.rank() == 0
            print("ok")
        """, RANK=1, WORLD_SIZE=2, LOCAL_RANK=1)
        self.assertEqual((rc, out.strip(), err), (0, "ok", ""))

    def test_sigterm_ends_the_script(self):
        p = start("""
            import sys, time, ddpdesk
            print("ready", flush=True)
            time.sleep(60)
        """)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, -signal.SIGTERM)


if __name__ == "__main__":
    unittest.main()
