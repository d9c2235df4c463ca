"""A plain PyTorch DDP training script, as ddpdesk runs it (docs/python-scripts.md).

Runs unchanged under torchrun too. It shows what a script does to be a good ddpdesk citizen:
- gradient accumulation done right: no_sync() on the micro-steps before the window's last, and
  the loss normalised by the window's global sample count, so world 2 x accumulation 2 trains
  exactly as world 1 x accumulation 4 on the same samples would (up to float rounding);
- the client: every rank's loss per optimizer step (ddpdesk.log), where each step's time goes
  (ddpdesk.phase: the window's Time per step chart), the Stop button seen by every rank at the
  same step (ddpdesk.should_stop, voted with an allreduce), a checkpoint in the run directory
  when stopped or finished, and a resume from DDPDESK_RESUME;
- --losses FILE: each rank also writes "step loss" lines (FILE.rank-N), for checking the charts.

    ddpdesk --task python --script examples/ddp_train.py --nproc 2 --batch-size 16 \\
        --accum-steps 2 --script-args '--epochs {epochs} --batch-size {batch_size} \\
        --accum-steps {accum_steps} --lr {lr} --seed {seed}'
"""
import ddpdesk  # first: it takes the stop signals before torch starts its threads

import argparse
import gc
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16, help="per rank, per micro-step")
    p.add_argument("--accum-steps", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=2048, help="size of the synthetic data set")
    p.add_argument("--step-sleep", type=float, default=0.0, help="seconds per step (demos, tests)")
    p.add_argument("--losses", default="", help="also write each rank's 'step loss' lines here")
    return p.parse_args()


def data(n, seed):
    """A synthetic 10-class problem, the same on every rank: no download."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 32, generator=g)
    w = torch.randn(32, 10, generator=g)
    y = (x @ w + 0.5 * torch.randn(n, 10, generator=g)).argmax(dim=1)
    return x, y


def main():
    args = parse_args()
    cuda = torch.cuda.is_available() and os.environ.get("DDPDESK_DEVICE", "cuda") == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    torch.manual_seed(args.seed)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 10)).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    x, y = data(args.samples, args.seed)

    micro = args.batch_size
    window = micro * args.accum_steps * world  # samples per optimizer step, every rank together
    steps_per_epoch = args.samples // window
    total = steps_per_epoch * args.epochs
    ddpdesk.set_total_steps(total)

    step = 0
    resume = os.environ.get("DDPDESK_RESUME")
    if resume and os.path.exists(os.path.join(resume, "checkpoint.pt")):
        state = torch.load(os.path.join(resume, "checkpoint.pt"), map_location=device)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]

    out = open(f"{args.losses}.rank-{rank}", "a") if args.losses else None
    stopped = False
    while step < total and not stopped:
        epoch, in_epoch = divmod(step, steps_per_epoch)
        # The epoch's order, the same on every rank; each rank takes its share of each window.
        order = torch.randperm(args.samples, generator=torch.Generator().manual_seed(args.seed + epoch))
        base = in_epoch * window
        opt.zero_grad()
        loss_sum = torch.zeros(())
        for m in range(args.accum_steps):
            with ddpdesk.phase("data"):
                lo = base + (m * world + rank) * micro
                idx = order[lo:lo + micro]
                xb, yb = x[idx].to(device), y[idx].to(device)
            last = m == args.accum_steps - 1
            ctx = model.no_sync() if not last else torch.enable_grad()
            with ctx:
                with ddpdesk.phase("forward"):
                    summed = F.cross_entropy(model(xb), yb, reduction="sum")
                # DDP averages gradients over ranks: scaling by world / window makes the update
                # the gradient of the window's global mean loss. (The window's last backward
                # also waits for DDP's allreduce of the gradients.)
                with ddpdesk.phase("backward"):
                    (summed * world / window).backward()
            loss_sum += summed.detach().cpu()
        # The gradient's norm after the allreduce (the same on every rank): a chart of its own.
        grad_norm = torch.stack([p.grad.detach().norm() for p in model.parameters()]).norm().item()
        with ddpdesk.phase("optimizer"):
            opt.step()
        step += 1
        rank_loss = loss_sum.item() / (micro * args.accum_steps)
        both = torch.tensor([loss_sum.item(), float(ddpdesk.should_stop())])
        with ddpdesk.phase("comm"):  # the loss and the stop vote, over every rank
            dist.all_reduce(both[:1])
            dist.all_reduce(both[1:], op=dist.ReduceOp.MAX)
        ddpdesk.log(step=step, loss=rank_loss, samples=step * window, epoch=epoch,
                    global_loss=both[0].item() / window, lr=args.lr, grad_norm=grad_norm)
        if out:
            out.write(f"{step} {rank_loss!r}\n")
            out.flush()
        if both[1].item():
            if not ddpdesk.should_stop():
                ddpdesk.request_stop()
            stopped = True
        if args.step_sleep:
            torch.distributed.barrier()
            import time
            time.sleep(args.step_sleep)

    if rank == 0 and ddpdesk.run_dir():
        path = os.path.join(ddpdesk.run_dir(), "checkpoint.pt")
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
        ddpdesk.checkpoint(path)
    dist.barrier()
    # PyTorch 1.13's Gloo process group can deadlock when the DDP module's garbage collection
    # destroys it (its worker thread, freeing a tensor, waits for the GIL that the destructor
    # holds while joining it). So the module goes first, while the group is still referenced,
    # and the group after it.
    del model, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
