#!/usr/bin/python3
"""Make a user task for ddpdesk: your own TorchScript model and your own tensors.

ddpdesk trains any module that TorchScript can *script* (not trace) on tensors that you save
from Python. This script is the example to copy: it defines a model, scripts and saves it, and
writes its training and validation data in both formats the engine reads.

    /usr/bin/python3 examples/make_user_task.py --out /tmp/fmnist-task
    build/app/ddpdesk --headless --nproc 2 --task script \
        --model /tmp/fmnist-task/model.pt \
        --train-data /tmp/fmnist-task/train.safetensors \
        --eval-data /tmp/fmnist-task/eval.safetensors \
        --loss cross_entropy --batch-size 64 --epochs 1

It writes into --out DIR:
  model.pt            torch.jit.script(Net()).save(...): the initial weights and the code
  train.safetensors   tensors "inputs" (float32) and "targets", first dimension = sample
  eval.safetensors    the same for validation
  train.pt, eval.pt   the same tensors as torch.save({"inputs": ..., "targets": ...})

Needs PyTorch and NumPy (on Debian: /usr/bin/python3 with python3-torch); the safetensors
files are written by hand below, so the `safetensors` package is not needed.
"""
import argparse
import gzip
import json
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# Debian's dataset-fashion-mnist; DDPDESK_FMNIST_DIR points elsewhere, as for the worker.
FMNIST_DIR = os.environ.get("DDPDESK_FMNIST_DIR") or "/usr/share/datasets/fashion-mnist"
FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530          # the engine's fmnist tasks use the same


# --- The model -----------------------------------------------------------------------------
# Any nn.Module works as long as torch.jit.script accepts it. Its forward takes the input
# batch (first dimension = sample) and returns the output batch.
class Net(nn.Module):
    def __init__(self, in_features, hidden, out_features, batchnorm=False, dropout=0.0):
        super().__init__()
        layers = [nn.Flatten()]  # [B, 1, 28, 28] and [B, 784] alike
        width = in_features
        for h in hidden:
            layers.append(nn.Linear(width, h))
            if batchnorm:
                layers.append(nn.BatchNorm1d(h))  # statistics per micro-batch in training
            layers.append(nn.ReLU())
            if dropout > 0:
                layers.append(nn.Dropout(dropout))  # the engine seeds it per rank and step
            width = h
        layers.append(nn.Linear(width, out_features))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


# With `--loss model` the engine calls the module's own per-sample loss instead of a built-in
# one. It must be exported (the engine calls it by name), take (output, target) and return one
# loss per sample: a tensor of shape [B]. This one repeats the built-in losses by hand, so that
# `--loss model` can be checked against them; put your own loss here.
class NetWithLoss(Net):
    kind: str  # "cross_entropy", "mse" or "bce": which loss per_sample_loss computes

    def __init__(self, kind, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = kind

    @torch.jit.export
    def per_sample_loss(self, output, target):
        if self.kind == "cross_entropy":  # target: class ids [B], int64
            return -F.log_softmax(output, dim=1).gather(1, target.unsqueeze(1)).squeeze(1)
        if self.kind == "bce":  # target: 0/1 floats, the shape of the output (logits)
            loss = F.binary_cross_entropy_with_logits(output, target, reduction="none")
        else:  # mse; target: floats, the shape of the output
            loss = (output - target) ** 2
        return loss.reshape(loss.shape[0], -1).mean(dim=1)


# --- The data -------------------------------------------------------------------------------
def read_idx(name, header_bytes):
    with gzip.open(os.path.join(FMNIST_DIR, name)) as f:
        return np.frombuffer(f.read(), np.uint8, offset=header_bytes)


def fashion_mnist(split, limit):
    """Fashion-MNIST images normalised as the engine's built-in tasks do; labels as int64."""
    images = read_idx(f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    labels = read_idx(f"{split}-labels-idx1-ubyte.gz", 8)
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = (torch.from_numpy(images.astype(np.float32)) / 255 - FMNIST_MEAN) / FMNIST_STD
    return x, torch.from_numpy(labels.astype(np.int64))


def synthetic(n, seed, split, loss, features=16, classes=4):
    """A small learnable problem: a fixed random two-layer "teacher" (from the seed) labels
    Gaussian inputs. Train and eval share the teacher and differ in their samples."""
    teacher = torch.Generator().manual_seed(seed)
    w1 = torch.randn(features, 32, generator=teacher) / features ** 0.5
    w2 = torch.randn(32, classes, generator=teacher) / 32 ** 0.5
    g = torch.Generator().manual_seed(seed * 2 + (1 if split == "eval" else 0) + 1000)
    x = torch.randn(n, features, generator=g)
    scores = torch.tanh(x @ w1) @ w2
    if loss == "cross_entropy":
        return x, scores.argmax(dim=1)  # class ids
    if loss == "bce":
        return x, (scores > 0).float()  # one 0/1 label per output
    return x, scores + 0.1 * torch.randn(n, classes, generator=g)  # mse: noisy regression


def targets_for_loss(y, loss, classes):
    """Fashion-MNIST labels as the loss expects them: ids, or one-hot floats for mse/bce."""
    return y if loss == "cross_entropy" else F.one_hot(y, classes).float()


# --- Writing the files ----------------------------------------------------------------------
SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
                      torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
                      torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: take the raw 16-bit words
        t = t.view(torch.int16)
    array = t.numpy()
    return array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def save_safetensors(tensors, path):
    """The safetensors layout: an 8-byte little-endian header length, a JSON header naming each
    tensor's dtype, shape and byte range (padded with spaces to a multiple of 8), the bytes."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = tensor_bytes(t)
        header[name] = {"dtype": SAFETENSORS_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def save_both(x, y, out, split):
    # clone(): torch.save writes a tensor's whole storage, so never save a slice of a big one.
    tensors = {"inputs": x.float().contiguous().clone(), "targets": y.contiguous().clone()}
    save_safetensors(tensors, os.path.join(out, f"{split}.safetensors"))
    torch.save(tensors, os.path.join(out, f"{split}.pt"))  # the zip format (PyTorch >= 1.6)


def build_model(a, in_features, out_features):
    """The module of these flags, with the initial weights of --seed (also used by the tests to
    rebuild the eager module whose state_dict keys a trained model.pt must have)."""
    torch.manual_seed(a.seed)
    hidden = (512, 256) if a.model == "mlp" else (32,)
    args = (in_features, hidden, out_features, a.batchnorm, a.dropout)
    return NetWithLoss(a.loss, *args) if a.loss_method else Net(*args)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder to write the files into")
    p.add_argument("--data", choices=["fmnist", "synthetic"], default="fmnist")
    p.add_argument("--model", choices=["mlp", "small"], default="mlp",
                   help="mlp: 784-512-256-10 like the built-in fmnist-mlp; small: one hidden "
                        "layer of 32")
    p.add_argument("--loss", choices=["cross_entropy", "mse", "bce"], default="cross_entropy",
                   help="the loss the targets are made for (class ids, or floats for mse/bce)")
    p.add_argument("--loss-method", action="store_true",
                   help="export per_sample_loss(output, target) for `--loss model`")
    p.add_argument("--batchnorm", action="store_true", help="BatchNorm1d after each hidden layer")
    p.add_argument("--dropout", type=float, default=0.0, help="Dropout(P) after each hidden layer")
    p.add_argument("--flat", action="store_true", help="Fashion-MNIST inputs as [N, 784]")
    p.add_argument("--limit", type=int, default=0,
                   help="training samples (Fashion-MNIST: the first N, default all 60000; "
                        "synthetic: default 512)")
    p.add_argument("--eval-limit", type=int, default=0,
                   help="validation samples (Fashion-MNIST: default all 10000; synthetic: 256)")
    p.add_argument("--seed", type=int, default=0, help="initial weights and synthetic data")
    return p


def dimensions(a):
    """(input features, outputs) of the model for these flags."""
    return (784, 10) if a.data == "fmnist" else (16, 4)


def main():
    a = parser().parse_args()
    os.makedirs(a.out, exist_ok=True)
    in_features, out_features = dimensions(a)
    for split in ("train", "eval"):
        limit = a.limit if split == "train" else a.eval_limit
        if a.data == "fmnist":
            x, y = fashion_mnist("train" if split == "train" else "t10k", limit)
            y = targets_for_loss(y, a.loss, out_features)
            if a.flat:
                x = x.reshape(len(x), -1)
        else:
            x, y = synthetic(limit or (512 if split == "train" else 256), a.seed, split, a.loss)
        save_both(x, y, a.out, split)

    # Script (never trace: a traced module ignores train/eval and would keep dropout on during
    # validation) and save. The engine loads this file, trains it and writes the trained module
    # as <run_dir>/model.pt in the same format: torch.jit.load it, or copy its state_dict into
    # your eager module.
    torch.jit.script(build_model(a, in_features, out_features)).save(os.path.join(a.out, "model.pt"))
    print(f"wrote model.pt, train/eval .safetensors and .pt into {a.out}")


if __name__ == "__main__":
    main()
