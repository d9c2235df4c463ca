#!/usr/bin/env python3
"""What the Python client (python/ddpdesk) costs a training script. Not a test: figures.

1. log() on the calling thread, inside a rank (a monitor socket read by another process and the
   metrics file written): the time spent inside each call of a loop that logs a step with a loss,
   samples and two scalars every 200 us of other work (median, 99th percentile). Target: under
   5 us. And the whole cost of a record, on both threads (they share the GIL): 50,000 logs back
   to back and close(), which waits until the sender has encoded, written and sent them all.
   And log() outside ddpdesk, where it does nothing.
2. A script's step loop with and without logging every step: a small MLP's forward, backward and
   SGD step on CPU with Debian's python3-torch (without torch: 1 ms of Python work per step), in
   alternating runs; the steps/s of each side (best, median) and the spread of the runs without
   (an overhead inside the spread is noise), and the process's CPU time per step, every thread
   (the sender's work included), which a shared machine disturbs less. Target: within 1 %.

    /usr/bin/python3 tests/bench/bench_python_client.py [rounds]    (default 5)
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))

PER_CALL = """
import time, ddpdesk
assert ddpdesk.active()
perf = time.perf_counter
inside = []
for i in range(1, 20001):
    t = perf()
    ddpdesk.log(step=i, loss=0.5 + i * 1e-6, samples=i * 64, lr=0.001, grad_norm=1.5)
    inside.append(perf() - t)
    end = perf() + 200e-6
    while perf() < end:
        pass
inside.sort()
n = 50000  # within the queue's 65,536 records: nothing dropped, every record encoded and sent
t = perf()
for i in range(n):
    ddpdesk.log(step=i, loss=0.5, samples=i * 64, lr=0.001, grad_norm=1.5)
ddpdesk.close(drain_s=120)  # until the sender has written and sent every line
whole = (perf() - t) / n
print(inside[len(inside) // 2] * 1e6, inside[len(inside) * 99 // 100] * 1e6, whole * 1e6,
      ddpdesk.dropped())
"""

OUTSIDE = """
import time, ddpdesk
assert not ddpdesk.active()
n = 1000000
t = time.perf_counter()
for i in range(n):
    ddpdesk.log(step=i, loss=0.5, samples=i * 64, lr=0.001, grad_norm=1.5)
print((time.perf_counter() - t) / n * 1e6)
"""

STEP_LOOP = """
import os, time
LOG = os.environ["BENCH_LOG"] == "1"
if LOG:
    import ddpdesk
try:
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
except ImportError:
    def step():
        s = 0.0
        end = time.perf_counter() + 1e-3
        while time.perf_counter() < end:
            s += 1.0
        return 1.0 / s
for _ in range(50):
    step()
steps = 2000
t, cpu = time.perf_counter(), time.process_time()
for i in range(1, steps + 1):
    loss = step()
    if LOG:
        ddpdesk.log(step=i, loss=loss, samples=i * 64, lr=0.01)
if LOG:
    ddpdesk.close()  # the sender's work for these steps is in the CPU time too
print(steps / (time.perf_counter() - t), (time.process_time() - cpu) / steps * 1e6)
"""


class Reader:
    """The monitor's end: a socket whose connections are read and thrown away, in a process of
    its own so that it takes nothing from the measured one's GIL."""

    def __init__(self, path):
        code = textwrap.dedent("""
            import socket, sys, threading
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1]); s.listen(64)
            print("listening", flush=True)
            def drain(c):
                while c.recv(1 << 16):
                    pass
            while True:
                c, _ = s.accept()
                threading.Thread(target=drain, args=(c,), daemon=True).start()
        """)
        self.p = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE,
                                  text=True)
        assert self.p.stdout.readline().strip() == "listening"

    def close(self):
        self.p.kill()
        self.p.wait()


def child(code, env):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [float(v) for v in out.split()]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "m.sock")
        reader = Reader(sock)
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1",
                   DDPDESK_MONITOR=sock, DDPDESK_TOKEN="bench", DDPDESK_RUN_DIR=tmp,
                   RANK="0", WORLD_SIZE="1", OMP_NUM_THREADS="1")
        try:
            median, p99, whole, dropped = child(PER_CALL, env)
            print("log() on the calling thread: %.2f us median, %.2f us 99th percentile (a call "
                  "every 200 us). Target: under 5 us. Whole cost of a record, both threads (50,000 "
                  "logs back to back, until the sender has written and sent them): %.2f us; %d "
                  "dropped" % (median, p99, whole, dropped))
            outside_env = {k: v for k, v in env.items() if not k.startswith("DDPDESK_")}
            print("log() outside ddpdesk (a no-op): %.2f us per call"
                  % child(OUTSIDE, outside_env)[0])
            with_log, without, cpu_with, cpu_without = [], [], [], []
            for i in range(rounds):
                for log in ((0, 1) if i % 2 == 0 else (1, 0)):
                    rate, cpu = child(STEP_LOOP, dict(env, BENCH_LOG=str(log)))
                    (with_log if log else without).append(rate)
                    (cpu_with if log else cpu_without).append(cpu)
        finally:
            reader.close()
    try:
        import torch  # noqa: F401
        loop = "MLP 256-256-10, batch 64, torch on 1 thread"
    except ImportError:
        loop = "1 ms of Python work per step (no torch)"
    spread = (max(without) - min(without)) / statistics.median(without) * 100
    ratio = statistics.median(with_log) / statistics.median(without)
    print("step loop (%s), %d rounds: without the client %.0f steps/s median (best %.0f), logging "
          "every step %.0f median (best %.0f): %.2f %% of the steps/s without; runs without "
          "spread %.1f %%. Target: within 1 %%" % (
              loop, rounds, statistics.median(without), max(without),
              statistics.median(with_log), max(with_log), ratio * 100, spread))
    print("CPU time per step, every thread of the process (less at the mercy of a shared "
          "machine than steps/s): without %.1f us (best %.1f), logging every step %.1f us (best "
          "%.1f): +%.2f %% by the medians, +%.2f %% by the bests" % (
              statistics.median(cpu_without), min(cpu_without), statistics.median(cpu_with),
              min(cpu_with),
              (statistics.median(cpu_with) / statistics.median(cpu_without) - 1) * 100,
              (min(cpu_with) / min(cpu_without) - 1) * 100))


if __name__ == "__main__":
    main()
