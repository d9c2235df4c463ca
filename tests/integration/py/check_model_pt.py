#!/usr/bin/python3
"""Checks a trained <run_dir>/model.pt written by `ddpdesk-worker --task script`.

Loads it with torch.jit.load, compares its state_dict keys (and shapes) with those of the module
that examples/make_user_task.py builds for the same flags (eager and scripted), and evaluates it
on a data file exactly as the engine's validation does: eval mode, mean per-sample loss over
every sample; accuracy for cross_entropy (argmax == target) and bce (sign of the logit against
the 0/1 target, averaged over a sample's outputs). Prints one JSON line:
  {"keys_match": bool, "missing": [...], "unexpected": [...], "eval_loss": x, "accuracy": y|null,
   "samples": n}
Usage (the flags after -- are the example's, as given when model.pt was made):
  /usr/bin/python3 check_model_pt.py --model-pt RUN/model.pt --eval-data eval.safetensors \
      --loss cross_entropy -- --data synthetic --model small
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))
import make_user_task  # noqa: E402
from user_task_common import correct, load_data, per_sample_loss  # noqa: E402


def main():
    argv = sys.argv[1:]
    example_argv = argv[argv.index("--") + 1:] if "--" in argv else []
    own_argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser()
    p.add_argument("--model-pt", required=True, help="the trained TorchScript file")
    p.add_argument("--eval-data", required=True)
    p.add_argument("--loss", required=True, choices=["cross_entropy", "mse", "bce", "model"])
    p.add_argument("--input-name", default="inputs")
    p.add_argument("--target-name", default="targets")
    p.add_argument("--batch", type=int, default=1000)
    a = p.parse_args(own_argv)
    ex = make_user_task.parser().parse_args(["--out", "unused"] + example_argv)

    trained = torch.jit.load(a.model_pt)
    eager = make_user_task.build_model(ex, *make_user_task.dimensions(ex))
    scripted = torch.jit.script(eager)
    want = {k: tuple(v.shape) for k, v in eager.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in trained.state_dict().items()}
    scripted_keys = set(scripted.state_dict().keys())
    result = {
        "keys_match": set(got) == set(want) and scripted_keys == set(want),
        "shapes_match": got == want,
        "missing": sorted(set(want) - set(got)),
        "unexpected": sorted(set(got) - set(want)),
    }

    x, y = load_data(a.eval_data, a.input_name, a.target_name, a.loss)
    trained.eval()
    loss_sum, right = 0.0, 0.0
    with torch.no_grad():
        for s in range(0, len(x), a.batch):
            out = trained(x[s:s + a.batch])
            target = y[s:s + a.batch]
            loss_sum += per_sample_loss(a.loss, trained, out, target).double().sum().item()
            right += correct(a.loss, out, target) or 0
    result["eval_loss"] = loss_sum / len(x)
    result["accuracy"] = right / len(x) if a.loss in ("cross_entropy", "bce") else None
    result["samples"] = len(x)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
