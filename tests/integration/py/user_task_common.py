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


def load_data(path, input_name="inputs", target_name="targets"):
    t = read_tensors(path)
    return t[input_name], t[target_name]


def per_sample_loss(kind, module, output, target):
    """One loss per sample, shape [B], as the engine defines each --loss."""
    if kind == "cross_entropy":
        return F.cross_entropy(output, target, reduction="none")
    if kind == "mse":
        loss = (output - target) ** 2
    elif kind == "bce":
        loss = F.binary_cross_entropy_with_logits(output, target, reduction="none")
    elif kind == "model":
        return module.per_sample_loss(output, target)
    else:
        raise ValueError(f"unknown loss {kind}")
    return loss.reshape(loss.shape[0], -1).mean(dim=1)
