"""What the reference scripts share: reading a user task's data files and the per-sample losses,
written from the engine's definitions (docs/user-task.md), independently of the engine's code."""
import json
import struct
import zipfile

import numpy as np
import torch
import torch.nn.functional as F

NUMPY_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4",
                "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(path):
    """Every tensor of a safetensors file, by name."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = blob[8 + n + begin:8 + n + end]
        if info["dtype"] == "BF16":
            t = torch.from_numpy(np.frombuffer(raw, "<i2").copy()).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.frombuffer(raw, NUMPY_DTYPES[info["dtype"]]).copy())
        out[name] = t.reshape(info["shape"])
    return out


def read_tensors(path):
    """A data file in either format: safetensors, or the zip format of torch.save(dict)."""
    if zipfile.is_zipfile(path):
        return torch.load(path)
    return read_safetensors(path)


def load_data(path, input_name="inputs", target_name="targets", loss="cross_entropy"):
    """(inputs, targets) as the engine feeds them: floating inputs as float32; targets as int64
    class ids for cross_entropy, float32 for mse and bce, floating ones as float32 for model."""
    t = read_tensors(path)
    x, y = t[input_name], t[target_name]
    if x.is_floating_point():
        x = x.float()
    if loss == "cross_entropy":
        y = y.long()
    elif loss in ("mse", "bce") or y.is_floating_point():
        y = y.float()
    return x, y


def per_sample_mean(t):
    """[B, ...] -> [B]: the mean over each sample's elements."""
    return t if t.dim() <= 1 else t.reshape(t.shape[0], -1).mean(dim=1)


def per_sample_loss(kind, module, output, target):
    """One loss per sample, shape [B], as the engine defines each --loss."""
    if kind == "cross_entropy":  # [B, C, ...] logits, [B, ...] class ids
        return per_sample_mean(F.cross_entropy(output, target, reduction="none"))
    if kind == "mse":
        return per_sample_mean((output - target) ** 2)
    if kind == "bce":
        return per_sample_mean(F.binary_cross_entropy_with_logits(output, target, reduction="none"))
    if kind == "model":
        return module.per_sample_loss(output, target)
    raise ValueError(f"unknown loss {kind}")


def correct(kind, output, target):
    """Correct predictions in a batch, as the engine counts them, or None where the loss has no
    accuracy: cross_entropy, argmax == class id; bce, the share of a sample's outputs whose sign
    matches its 0/1 target (logit > 0 against target > 0.5), summed over samples."""
    if kind == "cross_entropy":
        return per_sample_mean((output.argmax(dim=1) == target).double()).sum().item()
    if kind == "bce":
        return per_sample_mean(((output > 0) == (target > 0.5)).double()).sum().item()
    return None
