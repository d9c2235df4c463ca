#!/usr/bin/python3
"""A user task for the GPU check's out-of-memory steps (run_gpu_check.sh): a scripted model whose
activations are WIDTH x 256 bytes per sample, on tiny synthetic data, so a micro-batch of a few
thousand samples needs far more memory than any GPU has while the data stays a few MiB.

    python3 tests/gpu/make_oom_task.py --out DIR --samples N --width WIDTH

writes DIR/model.pt (torch.jit.script) and DIR/train.safetensors (N samples of 16 features, 4
classes). The model: [B, 16] -> Linear -> [B, 64] -> the outer product with a learned vector
of WIDTH values -> [B, 64, WIDTH] (the wide activation, 256 x WIDTH bytes a sample in float32)
-> mean over WIDTH -> Linear -> [B, 4]. The forward and the backward each hold one wide tensor at
a time. A matrix product and a reduction, no chain of elementwise operations: nothing that
TorchScript's fuser would compile into a kernel of its own for tensors of billions of elements.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from make_user_task import save_safetensors, synthetic  # noqa: E402


class Spread(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.inner = nn.Linear(16, 64)
        self.spread = nn.Parameter(torch.ones(width))
        self.head = nn.Linear(64, 4)

    def forward(self, x):
        h = self.inner(x)
        wide = torch.matmul(h.unsqueeze(2), self.spread.unsqueeze(0))  # [B, 64, 1] @ [1, width]
        return self.head(wide.mean(dim=2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--width", type=int, required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    x, y = synthetic(a.samples, 0, "train", "cross_entropy")
    save_safetensors({"inputs": x, "targets": y}, os.path.join(a.out, "train.safetensors"))
    torch.manual_seed(0)
    torch.jit.script(Spread(a.width)).save(os.path.join(a.out, "model.pt"))
    print(f"oom task: {a.samples} samples, {a.width * 256 / 2**20:.2f} MiB of activation a sample")


if __name__ == "__main__":
    main()
