"""A training loop that only prints its loss: no client, no torch, no change for ddpdesk.

ddpdesk reads "loss=..." from each rank's output and charts it (docs/python-scripts.md), as it
would from any script that prints its losses (a tqdm bar's postfix, transformers' Trainer dicts).
    ddpdesk --task python --script examples/print_only.py --nproc 2 --script-args '--steps 50'
"""
import argparse
import math
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=50)
p.add_argument("--sleep", type=float, default=0.05, help="seconds per step")
args = p.parse_args()
rank = int(os.environ.get("RANK", 0))
for step in range(1, args.steps + 1):
    loss = 2.0 * math.exp(-step / 20) + 0.01 * rank
    print(f"epoch 0 step {step} loss={loss:.6f}", flush=True)
    time.sleep(args.sleep)
