"""A rank of tests/slurm/test_slurm_script.sh: what torchrun's contract gives it, then printed
losses (no client, no torch), then, with --fail-at N, a ZeroDivisionError at step N on rank 1.

Writes <DDPDESK_RUN_DIR>/env-<RANK>.json first: the variables a torchrun script reads."""
import argparse
import json
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--fail-at", type=int, default=0)
p.add_argument("--batch", type=int, default=0, help="the {batch_size} placeholder")
args = p.parse_args()

names = ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
         "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
         "TORCHELASTIC_RUN_ID", "DDPDESK_BATCH_SIZE", "DDPDESK_ACCUM_STEPS", "DDPDESK_RUN_DIR",
         "DDPDESK_STOP_FILE", "PYTHONPATH"]
rank = int(os.environ["RANK"])
seen = {n: os.environ.get(n) for n in names}
seen["cwd"] = os.getcwd()
seen["batch_arg"] = args.batch
with open(os.path.join(os.environ["DDPDESK_RUN_DIR"], "env-%d.json" % rank), "w") as f:
    json.dump(seen, f)
for step in range(1, args.steps + 1):
    if step == args.fail_at and rank == 1:
        print(1 / 0)
    print("step %d loss=%.4f" % (step, 1.0 / step + rank), flush=True)
    time.sleep(args.sleep)
