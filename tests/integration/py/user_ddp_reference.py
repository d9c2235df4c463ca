#!/usr/bin/python3
"""PyTorch DDP reference for ddpdesk's user task (`ddpdesk-worker --task script`).

Trains the same TorchScript model.pt on the same data file with torch's own
DistributedDataParallel (gloo, CPU), DistributedSampler and Adam, with gradient accumulation
through no_sync(), reproducing the engine's semantics exactly:
  - each rank's epoch index list (DistributedSampler(shuffle=True, seed, drop_last=False),
    set_epoch(e)) is cut into micro-batches of --batch (the last may be short), those into
    windows of --accum micro-batches (the last may be short); one optimizer step per window;
  - the loss of a step is the mean per-sample loss over every sample of the window on every
    rank: each rank backpropagates sum(its per-sample losses) * W / (global window count), and
    DDP's average over the W ranks turns that into the global mean's gradient.
Rank 0 prints one JSON line per optimizer step, {"step": k (1-based, across epochs),
"global_loss": ...}, and with --eval-data one line per epoch, {"epoch": e, "eval_loss": ...,
"accuracy": ...}, to stdout and to --out FILE.

Run with Debian's Python (python3-torch 1.13): either under a launcher that sets torchrun's
environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...), or with --nproc W, which forks
the W ranks itself (Debian's torchrun crashes on Python 3.11).
    /usr/bin/python3 tests/integration/py/user_ddp_reference.py --nproc 2 --model m.pt \
        --data train.safetensors --batch 4 --accum 2 --epochs 2 --loss cross_entropy
"""
import argparse
import contextlib
import datetime
import json
import os
import signal
import socket
import sys
import time
import traceback

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import TensorDataset
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from user_task_common import correct, load_data, per_sample_loss  # noqa: E402


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, help="TorchScript file (torch.jit.script(m).save)")
    p.add_argument("--data", required=True, help="training data: .safetensors or torch.save zip")
    p.add_argument("--eval-data", help="validation data; evaluated after every epoch")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--loss", default="cross_entropy",
                   choices=["cross_entropy", "mse", "bce", "model"])
    p.add_argument("--input-name", default="inputs")
    p.add_argument("--target-name", default="targets")
    p.add_argument("--eval-batch", type=int, default=1000)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: the forward under torch.autocast('cpu', torch.bfloat16), the "
                        "loss on its output cast back to float32 (as the engine does)")
    p.add_argument("--out", help="also write rank 0's JSON lines to this file")
    p.add_argument("--nproc", type=int, default=0,
                   help="start this many ranks (when RANK is not already set)")
    return p.parse_args()


def launch(a):
    """torchrun's environment contract, by hand: one process per rank, a free local port. The
    ranks are forked, so they share this process's imported torch instead of importing it
    again (seconds each); each ends with os._exit and never returns here."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    for r in range(a.nproc):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.environ.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.nproc),
                                  LOCAL_WORLD_SIZE=str(a.nproc), MASTER_ADDR="127.0.0.1",
                                  MASTER_PORT=str(port), OMP_NUM_THREADS="1")
                train(a)
                code = 0
            except BaseException:  # noqa: B902 — the launcher names the failed rank
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    # A rank that fails leaves its peers waiting in a collective: end them, say which failed.
    # A launcher that is itself ended (e.g. by `timeout`) ends its ranks too.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    codes = [None] * len(pids)
    try:
        while True:
            for r, pid in enumerate(pids):
                if codes[r] is None:
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if done:
                        codes[r] = os.waitstatus_to_exitcode(status)
            failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                r = failed[0]
                print(f"user_ddp_reference: rank {r} exited with {codes[r]}", file=sys.stderr)
                return 1
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.05)
    finally:
        signal.signal(signal.SIGTERM, previous)
        for r, pid in enumerate(pids):
            if codes[r] is None:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def main():
    a = parse()
    if a.nproc and "RANK" not in os.environ:
        sys.exit(launch(a))
    train(a)


def train(a):
    """One rank's run; ends the process (os._exit) when it succeeds."""
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(a.seed)  # dropout only; the weights come from model.pt
    # A lost peer fails a collective after two minutes instead of hanging the test.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    lines = []

    def emit(obj):
        if rank == 0:
            line = json.dumps(obj)
            print(line, flush=True)
            lines.append(line)

    module = torch.jit.load(a.model)
    module.train()
    ddp = DistributedDataParallel(module)  # broadcasts rank 0's parameters and buffers
    opt = torch.optim.Adam(ddp.parameters(), lr=a.lr, weight_decay=a.weight_decay)

    x, y = load_data(a.data, a.input_name, a.target_name, a.loss)
    sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world, rank=rank,
                                 shuffle=True, seed=a.seed, drop_last=False)
    step = 0
    for epoch in range(a.epochs):
        sampler.set_epoch(epoch)
        indices = list(sampler)
        micro = [indices[i:i + a.batch] for i in range(0, len(indices), a.batch)]
        windows = [micro[i:i + a.accum] for i in range(0, len(micro), a.accum)]
        for window in windows:
            # Every rank's window holds the same count (the sampler pads to a multiple of W).
            local_n = sum(len(m) for m in window)
            global_n = local_n * world
            scale = world / global_n  # DDP divides the summed gradients by W again
            loss_sum = torch.zeros((), dtype=torch.float64)
            for k, idx in enumerate(window):
                boundary = k + 1 == len(window)
                with contextlib.nullcontext() if boundary else ddp.no_sync():
                    with autocast(a):
                        out = ddp(x[idx])
                    losses = per_sample_loss(a.loss, module, out.float(), y[idx])
                    total = losses.sum()
                    (total * scale).backward()
                loss_sum += total.detach().double()
            opt.step()
            opt.zero_grad(set_to_none=False)
            step += 1
            sums = torch.stack([loss_sum, torch.tensor(float(local_n), dtype=torch.float64)])
            dist.all_reduce(sums)
            emit({"step": step, "epoch": epoch, "global_loss": (sums[0] / sums[1]).item(),
                  "window_samples": int(sums[1].item())})
        if a.eval_data:
            emit(dict(evaluate(a, ddp, module, rank, world), epoch=epoch))

    if rank == 0 and a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    # Torch 1.13's gloo process group sometimes hangs in its teardown at interpreter exit once
    # the other rank is gone: meet once more, then leave without running destructors.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def autocast(a):
    if a.precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def evaluate(a, ddp, module, rank, world):
    """Like the engine's validation: eval mode, samples rank::world, sums allreduced. Through
    the DDP wrapper: its first forward after a step broadcasts rank 0's buffers (BatchNorm's
    running statistics), so every rank evaluates with the same ones, as in the engine."""
    x, y = load_data(a.eval_data, a.input_name, a.target_name, a.loss)
    module.eval()
    mine = list(range(rank, len(x), world))
    loss_sum, right = 0.0, 0.0
    with torch.no_grad():
        for s in range(0, len(mine), a.eval_batch):
            idx = mine[s:s + a.eval_batch]
            with autocast(a):
                out = ddp(x[idx])
            out = out.float()
            loss_sum += per_sample_loss(a.loss, module, out, y[idx]).double().sum().item()
            right += correct(a.loss, out, y[idx]) or 0
    module.train()
    sums = torch.tensor([loss_sum, right, float(len(mine))], dtype=torch.float64)
    dist.all_reduce(sums)
    result = {"eval_loss": (sums[0] / sums[2]).item()}
    if a.loss in ("cross_entropy", "bce"):
        result["accuracy"] = (sums[1] / sums[2]).item()
    return result


if __name__ == "__main__":
    main()
