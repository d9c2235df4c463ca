#!/usr/bin/python3
"""A rank with DataLoader worker processes (num_workers=2), for the tests that no process of a
run outlives it. Each rank writes its pid to pids.rank-N and each worker its own to
workers.rank-N (in its working directory), then reads batches slowly until it is stopped or
killed. No client: SIGTERM ends it the default way.

  loader_workers.py
"""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        time.sleep(0.05)
        return torch.tensor([float(i)])


def note_worker(_):
    with open("workers.rank-%s" % os.environ["RANK"], "a") as f:
        f.write("%d\n" % os.getpid())


def main():
    rank = os.environ["RANK"]
    with open("pids.rank-%s" % rank, "w") as f:
        f.write("%d\n" % os.getpid())
    loader = DataLoader(Slow(), batch_size=2, num_workers=2, worker_init_fn=note_worker)
    for step, batch in enumerate(loader, 1):
        print("step %d loss=%.4f" % (step, 1.0 / step), flush=True)


if __name__ == "__main__":
    main()
