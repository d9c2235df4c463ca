"""Python reference for the GPU check: PyTorch DDP (NCCL, one GPU) on Fashion-MNIST, the same
CNN, Adam and batch size as `ddpdesk-worker --task fmnist-cnn --device cuda`. Prints samples/s.
PRECISION (fp32, bf16, fp16) runs the forward under torch.autocast as the worker's --precision
does, fp16 with torch.cuda.amp.GradScaler; the last step's loss is printed as final_loss.
Run: MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=0 WORLD_SIZE=1 python3 fmnist_cuda_ref.py DIR [EPOCHS [BATCH [PRECISION]]]
"""
import gzip, os, sys, time
import numpy as np, torch, torch.nn as nn, torch.distributed as dist

d = sys.argv[1]
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
def idx(name, off):
    with gzip.open(os.path.join(d, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=off)
x = torch.from_numpy(idx("train-images-idx3-ubyte.gz", 16).copy()).float().div_(255).view(-1, 1, 28, 28)
x = ((x - 0.2860) / 0.3530).cuda()
y = torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8).copy()).long().cuda()
dist.init_process_group("nccl")
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                    nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
net = nn.parallel.DistributedDataParallel(net, device_ids=[0])
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
crit = nn.CrossEntropyLoss()
B = int(sys.argv[3]) if len(sys.argv) > 3 else 64
precision = sys.argv[4] if len(sys.argv) > 4 else "fp32"
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16")
torch.cuda.synchronize(); t0 = time.perf_counter(); seen = 0
for epoch in range(epochs):
    g = torch.Generator(); g.manual_seed(epoch)
    perm = torch.randperm(len(y), generator=g).cuda()
    for i in range(0, len(y), B):
        b = perm[i:i + B]
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            out = net(x[b])
        loss = crit(out.float(), y[b])
        scaler.scale(loss).backward()
        scaler.step(opt); scaler.update(); seen += len(b)
torch.cuda.synchronize(); dt = time.perf_counter() - t0
print(f"python-ddp-cuda model=cnn world=1 batch={B} epochs={epochs} precision={precision} "
      f"time={dt:.2f}s samples_per_s={seen/dt:.0f} final_loss={loss.item():.6g}")
