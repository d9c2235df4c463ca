"""The fmnist Python reference (tests/bench/reference/fmnist_ddp.py) with its seed taken from
ANCHOR_SEED and the first two optimizer steps' losses (mean over ranks) printed by rank 0, for
bench_accuracy.sh.

The anchor's own text runs, changed only where listed below; a change that no longer applies
(the anchor edited) stops this with a one-line reason instead of running something else.
Usage: launch.sh 2 python3 anchor_seeded.py ANCHOR [the anchor's own flags]
"""
import os
import sys

anchor = sys.argv.pop(1)
seed = int(os.environ["ANCHOR_SEED"])
src = open(anchor).read()
edits = [
    ("torch.manual_seed(0)", f"torch.manual_seed({seed})"),
    ("DistributedSampler(train, seed=0)", f"DistributedSampler(train, seed={seed})"),
    ("(loss(x, y) / a.accum).backward()",
     "_l = loss(x, y); (_l / a.accum).backward()\n"
     "            if epoch == 0 and i < 2:\n"
     "                _t = _l.detach().clone(); dist.all_reduce(_t)\n"
     "                if rank == 0: print(f'first-loss step={i + 1} loss={_t.item() / world:.9f}')"),
]
for old, new in edits:
    if src.count(old) != 1:
        sys.exit(f"anchor_seeded.py: {anchor} no longer contains {old!r} once")
    src = src.replace(old, new)
sys.argv[0] = anchor
exec(compile(src, anchor, "exec"))
