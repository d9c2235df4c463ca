#!/usr/bin/python3
"""A PyTorch DDP script (Gloo, CPU) whose rank HOLD_RANK's data loading never returns from
optimizer step HOLD_STEP on: its dataset's __getitem__ sleeps until the rank is killed, while the
other rank waits for it in DDP's gradient allreduce. Every rank logs each step with the client, so
the monitor sees the steps stop. For the hang doctor's test of script runs.

  held_loader.py HOLD_RANK HOLD_STEP
"""
import ddpdesk  # first: the stop signals and the hang doctor's faulthandler

import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

BATCH = 4


class Shards(Dataset):
    def __init__(self, rank, hold_rank, hold_step):
        self.rank, self.hold_from = rank, None
        if rank == hold_rank:
            self.hold_from = (hold_step - 1) * BATCH  # the first sample of that step

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        if self.hold_from is not None and i >= self.hold_from:
            while True:  # a read that never comes back
                time.sleep(0.05)
        g = torch.Generator().manual_seed(i)
        return torch.randn(8, generator=g), torch.randint(0, 2, (), generator=g)


def main():
    hold_rank, hold_step = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Shards(rank, hold_rank, hold_step), batch_size=BATCH, num_workers=0)
    for step, (x, y) in enumerate(loader, 1):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ddpdesk.log(step=step, loss=loss.item(), samples=step * BATCH * dist.get_world_size())
        time.sleep(0.02)
        if ddpdesk.should_stop():
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
