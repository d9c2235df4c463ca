"""Expected index lists of torch.utils.data.DistributedSampler, for tests/engine/test_sampler.cpp.

Produced once with Debian's python3-torch (1.13.1+dfsg-4):
    /usr/bin/python3 tests/engine/data/make_sampler_cases.py > tests/engine/data/sampler_cases.json
Regenerate only if PyTorch's sampler itself changes; the C++ sampler must match these lists.
"cases" hold every rank's full list; "large" holds a head, tail, count and sum of one rank's list
at Fashion-MNIST scale (too long to store whole).
"""
import json
import sys

import torch
from torch.utils.data.distributed import DistributedSampler


def indices(n, world, rank, shuffle, drop_last, seed, epoch):
    s = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=shuffle,
                           seed=seed, drop_last=drop_last)
    s.set_epoch(epoch)
    return list(s)


def main():
    cases = []
    for n in (0, 1, 3, 7, 12, 25, 103):
        for world in (1, 2, 3, 4, 8):
            for drop_last in (False, True):
                runs = [(False, 0, 0), (True, 0, 0), (True, 0, 1), (True, 42, 1), (True, 7, 0)]
                for shuffle, seed, epoch in runs:
                    ranks = [indices(n, world, r, shuffle, drop_last, seed, epoch)
                             for r in range(world)]
                    cases.append(dict(n=n, world=world, shuffle=shuffle, drop_last=drop_last,
                                      seed=seed, epoch=epoch, ranks=ranks))
    large = []
    for n, world, rank, seed, epoch in ((60000, 2, 0, 0, 0), (60000, 3, 2, 1234, 5),
                                        (10001, 8, 5, 99, 2)):
        for drop_last in (False, True):
            idx = indices(n, world, rank, True, drop_last, seed, epoch)
            large.append(dict(n=n, world=world, rank=rank, shuffle=True, drop_last=drop_last,
                              seed=seed, epoch=epoch, head=idx[:32], tail=idx[-8:],
                              count=len(idx), sum=sum(idx)))
    out = sys.stdout
    out.write('{"torch": %s,\n"cases": [\n' % json.dumps(torch.__version__))
    out.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
    out.write('\n],\n"large": [\n')
    out.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in large))
    out.write("\n]}\n")


if __name__ == "__main__":
    main()
