#!/usr/bin/python3
"""Fixtures for the user task's dry-run tests: one good task and the broken files around it.

Writes into --out DIR the good synthetic task of examples/make_user_task.py (small model, 64
training and 32 validation samples: model.pt, train/eval .safetensors and .pt) and these broken
ones, each wrong in exactly one way:
  state_dict.pt            torch.save(model.state_dict()): a zip, but not TorchScript
  frozen.pt                torch.jit.freeze of the scripted module in eval mode (no parameters)
  traced_dropout.pt        torch.jit.trace of a module with dropout (ignores train/eval)
  loss_scalar.pt           per_sample_loss returns the batch mean (shape []), not one per sample
  newer_pytorch.pt         model.pt with its recorded file format version raised to
                           NEWER_VERSION, as a newer PyTorch would record it; otherwise the same
  newer_op.pt              model.pt whose code calls aten::NEWER_OP (an op this LibTorch lacks)
                           instead of aten::linear
  count_mismatch.safetensors   64 inputs, 63 targets
  float_targets.safetensors    float32 targets (cross_entropy needs int64 class ids)
  wide_targets.safetensors     float32 targets [N, 3] (the model outputs [N, 4]: wrong for mse)
  nan_inputs.safetensors       inputs[NAN_SAMPLE] holds a NaN
The good model outputs [B, 4] for inputs [B, 16]; its targets are int64 class ids.
"""
import argparse
import os
import sys
import zipfile

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))
import make_user_task as ex  # noqa: E402

NAN_SAMPLE = 37  # the tests look for this index in the worker's message
NEWER_VERSION = 99  # the file format version of newer_pytorch.pt, in the worker's message too
NEWER_OP = "op_of_a_newer_pytorch"  # what newer_op.pt calls, named in the worker's message


class ScalarLoss(ex.Net):
    """per_sample_loss with the wrong shape: one number for the whole batch."""

    @torch.jit.export
    def per_sample_loss(self, output, target):
        return F.cross_entropy(output, target)


def with_format_version(src, dst, version):
    """Copies the TorchScript archive src to dst with `version` as its recorded file format
    version (the <name>/version entry, and <name>/.data/version where the archive has one);
    every other entry, its name and compression the same."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.split("/", 1)[-1] in ("version", ".data/version"):
                data = f"{version}\n".encode()
            zout.writestr(info, data)


def with_code_replaced(src, dst, old, new):
    """Copies the TorchScript archive src to dst with `old` replaced by `new` in its code."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if "/code/" in info.filename and info.filename.endswith(".py"):
                data = data.replace(old.encode(), new.encode())
            zout.writestr(info, data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    out = p.parse_args().out
    flags = ["--out", out, "--data", "synthetic", "--model", "small", "--limit", "64",
             "--eval-limit", "32", "--seed", "3"]
    sys.argv = [sys.argv[0]] + flags
    ex.main()  # the good task
    a = ex.parser().parse_args(flags)
    features, classes = ex.dimensions(a)
    path = lambda name: os.path.join(out, name)  # noqa: E731

    model = ex.build_model(a, features, classes)
    torch.save(model.state_dict(), path("state_dict.pt"))
    torch.jit.freeze(torch.jit.script(model).eval()).save(path("frozen.pt"))
    dropout = ex.Net(features, (32,), classes, dropout=0.5)
    traced = torch.jit.trace(dropout, torch.zeros(2, features), check_trace=False)
    traced.save(path("traced_dropout.pt"))
    torch.jit.script(ScalarLoss(features, (32,), classes)).save(path("loss_scalar.pt"))
    # The rewrite keeps the archive valid: with the version it had, it still loads.
    with zipfile.ZipFile(path("model.pt")) as z:
        entries = {n.split("/", 1)[-1]: n for n in z.namelist()}
        recorded = int(z.read(entries.get(".data/version", entries["version"])))
    with_format_version(path("model.pt"), path("same_version.pt"), recorded)
    torch.jit.load(path("same_version.pt"))
    os.remove(path("same_version.pt"))
    with_format_version(path("model.pt"), path("newer_pytorch.pt"), NEWER_VERSION)
    with_code_replaced(path("model.pt"), path("newer_op.pt"), "torch.linear(",
                       f"torch.{NEWER_OP}(")

    x, y = ex.synthetic(64, a.seed, "train", "cross_entropy")
    ex.save_safetensors({"inputs": x, "targets": y[:63].clone()}, path("count_mismatch.safetensors"))
    ex.save_safetensors({"inputs": x, "targets": y.float()}, path("float_targets.safetensors"))
    ex.save_safetensors({"inputs": x, "targets": torch.zeros(64, 3)}, path("wide_targets.safetensors"))
    bad = x.clone()
    bad[NAN_SAMPLE, 5] = float("nan")
    ex.save_safetensors({"inputs": bad, "targets": y}, path("nan_inputs.safetensors"))


if __name__ == "__main__":
    main()
