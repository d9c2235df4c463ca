"""Reference: PyTorch (Python) DDP on Fashion-MNIST from Debian's dataset-fashion-mnist, CPU/gloo.

The like-for-like anchor for the engine's fashion-mnist task: same models, Adam, CrossEntropy,
DistributedSampler(seed, set_epoch), gradient accumulation with no_sync. Rank 0 prints
samples/s over the timed epochs and the final test accuracy. --precision bf16 runs each forward
under torch.autocast("cpu", dtype=torch.bfloat16), the loss from the output cast back to
float32 outside it, as `ddpdesk-worker --precision bf16` does.
Run: tests/bench/reference/launch.sh 2 python3 tests/bench/reference/fmnist_ddp.py --model mlp --epochs 1 --batch 64 --accum 1
"""
import argparse, gzip, os, time, contextlib
import numpy as np, torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

D = "/usr/share/datasets/fashion-mnist"
def idx(name, off):
    with gzip.open(os.path.join(D, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)
def load(split):
    x = torch.from_numpy(idx(f"{split}-images-idx3-ubyte.gz", 16).copy()).float().div_(255).view(-1, 1, 28, 28)
    x = (x - 0.2860) / 0.3530
    y = torch.from_numpy(idx(f"{split}-labels-idx1-ubyte.gz", 8).copy()).long()
    return TensorDataset(x, y)

def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))

p = argparse.ArgumentParser()
p.add_argument("--model", default="mlp"); p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batch", type=int, default=64); p.add_argument("--accum", type=int, default=1)
p.add_argument("--lr", type=float, default=1e-3); p.add_argument("--limit", type=int, default=0)
p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
a = p.parse_args()
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
train, test = load("train"), load("t10k")
if a.limit:
    train = torch.utils.data.Subset(train, range(a.limit))
sampler = DistributedSampler(train, seed=0)
loader = DataLoader(train, batch_size=a.batch, sampler=sampler)
net = nn.parallel.DistributedDataParallel(model(a.model))
opt = torch.optim.Adam(net.parameters(), lr=a.lr)
crit = nn.CrossEntropyLoss()
def loss(x, y):
    if a.precision == "fp32":
        return crit(net(x), y)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x)
    return crit(out.float(), y)
dist.barrier(); t0 = time.perf_counter(); seen = 0
for epoch in range(a.epochs):
    sampler.set_epoch(epoch)
    for i, (x, y) in enumerate(loader):
        boundary = (i + 1) % a.accum == 0 or i + 1 == len(loader)
        with (contextlib.nullcontext() if boundary else net.no_sync()):
            (loss(x, y) / a.accum).backward()
        if boundary:
            opt.step(); opt.zero_grad()
        seen += len(y)
dist.barrier(); dt = time.perf_counter() - t0
with torch.no_grad():
    net.eval(); correct = sum((net(x).argmax(1) == y).sum().item() for x, y in DataLoader(test, batch_size=1000))
if rank == 0:
    print(f"python-ddp model={a.model} precision={a.precision} world={world} batch={a.batch} accum={a.accum} epochs={a.epochs} "
          f"time={dt:.2f}s samples_per_s={seen*world/dt:.0f} test_acc={correct/len(test):.4f}")
