"""A script rank that prints its losses and, on the run's first attempt, dies at step 4 (rank 1):
started again by ddpdesk's automatic restart, each attempt writes down what it was told."""
import os
import sys
import time

rank = int(os.environ["RANK"])
count = os.environ.get("TORCHELASTIC_RESTART_COUNT", "")
out = sys.argv[1]
with open(os.path.join(out, f"attempt-{count}-rank-{rank}.txt"), "w") as f:
    for key in ("TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "DDPDESK_RESUME"):
        f.write(f"{key}={os.environ.get(key, '')}\n")
for step in range(1, 7):
    print(f"step {step} loss={1.0 / step:.4f}", flush=True)
    time.sleep(0.1)
    if count == "0" and rank == 1 and step == 4:
        os._exit(5)
