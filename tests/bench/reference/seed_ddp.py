"""The seed's DDP script, made runnable on CPU (gloo) and timed.

Faithful to the seed: same Dataset, Model, collate_fn, batch size, Adam(lr=1e-4,
wd=5e-4), MSELoss, DistributedSampler with set_epoch. Differences: backend gloo on
CPU, a fixed number of epochs, and a samples/s figure printed by rank 0.
Run: tests/bench/reference/launch.sh 2 python3 tests/bench/reference/seed_ddp.py EPOCHS
"""
import os, sys, time
from itertools import accumulate
import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

class Dataset(torch.utils.data.Dataset):
    def __init__(self, len):
        super().__init__()
        self.data_len = len
    def __len__(self):
        return self.data_len
    def __getitem__(self, index):
        n = torch.randint(0, 10, (1,)).item() * 11
        return torch.full((n, 10), index).float() + torch.randn((10,)), index

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 1)
    def forward(self, x, s):
        max_length = max(s)
        batch_size = len(s)
        s = [0] + list(accumulate(s))
        x = self.fc(x).view(x.shape[0], -1)
        x = torch.cat([
            torch.cat([x[s[i-1]:s[i]].view(-1), torch.zeros((max_length - s[i] + s[i-1])).to(x.device)]).reshape(1, max_length)
            if s[i-1] != s[i] else torch.zeros((1, max_length)).to(x.device) for i in range(1, len(s))
        ], dim=0)
        return torch.max(x, dim=1).values

def collate_fn(batch):
    (img, target), sizes = list(zip(*batch)), [x.shape[0] for x, _ in batch]
    return torch.cat(img, dim=0).float(), torch.tensor(target).float(), sizes

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
batch_size = int(os.environ.get("BATCH", "4"))
torch.set_num_threads(1)
torch.distributed.init_process_group(backend="gloo")
rank = torch.distributed.get_rank()
train_dataset = Dataset(900)
train_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=False,
                          sampler=DistributedSampler(train_dataset), collate_fn=collate_fn)
model = Model()
model = torch.nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, weight_decay=5e-4)
criterion = torch.nn.MSELoss()
torch.distributed.barrier()
t0 = time.perf_counter()
samples = 0
for epoch in range(epochs):
    train_loader.sampler.set_epoch(epoch)
    for img, target, s in train_loader:
        optimizer.zero_grad()
        output = model(img, s)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        samples += len(s)
torch.distributed.barrier()
dt = time.perf_counter() - t0
if rank == 0:
    world = torch.distributed.get_world_size()
    print(f"seed-python world={world} batch={batch_size} epochs={epochs} time={dt:.3f}s "
          f"samples_per_s={samples*world/dt:.1f} last_loss={loss.item():.4f}")
