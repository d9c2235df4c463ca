#!/usr/bin/python3
"""Runs many of the tests' Python script invocations in one interpreter: torch is imported once
(about 2 s of CPU each time) instead of once per script, and user_ddp_reference.py forks its
ranks from this process instead of starting fresh interpreters.

Usage: python_batch.py --jobs JOBS.json --out DIR [--cache CACHE_DIR]
JOBS.json: [{"id": "...", "argv": ["script.py", "arg", ...]}, ...]; "{root}" in an argument
stands for the folder the results go to. Each job runs as `python3 script.py args...` would (its
__main__, in order), its stdout and stderr (the forked ranks' too) into ROOT/ID.log; then
ROOT/results.json maps each id to its exit code, and the last line printed is
{"root": ROOT, "cached": bool}.
Without --cache, ROOT is --out. With it, ROOT is CACHE_DIR/<key>, where the key hashes the job
list, every script the jobs can reach and the Python/torch versions: a second test run (the
sanitizer build's, say) with the same jobs and scripts reuses the results, which are plain
PyTorch computations that no build of ddpdesk changes. A new key removes the older ones; a
batch in which a job failed is not kept.
"""
import argparse
import hashlib
import importlib.metadata
import json
import os
import runpy
import shutil
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# Every Python file a job can run or import: a change to any of them makes a new key.
SOURCES = [os.path.join(HERE, name) for name in sorted(os.listdir(HERE)) if name.endswith(".py")]
SOURCES.append(os.path.join(HERE, "..", "..", "..", "examples", "make_user_task.py"))


def cache_key(jobs_text):
    h = hashlib.sha256(jobs_text.encode())
    h.update(sys.version.encode())
    for dist in ("torch", "numpy"):
        try:
            h.update(importlib.metadata.version(dist).encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(b"-")
    for path in SOURCES:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def run_job(argv, log_path):
    """argv[0]'s __main__ with sys.argv = argv, output into log_path; its exit code."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "wb") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    try:
        runpy.run_path(argv[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: B902 — a failing job is reported, the batch goes on
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        sys.argv, sys.path[:] = saved_argv, saved_path
    return code


def run_all(jobs, root):
    os.makedirs(root, exist_ok=True)
    try:
        import torch  # noqa: F401 — once, for every job
    except ImportError as e:
        sys.exit(f"python_batch: {sys.executable} cannot import torch ({e}): "
                 "scripts/install-deps.sh installs python3-torch")
    # Forked reference ranks must not inherit a thread pool (and the tests run single-threaded).
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    results = {}
    for job in jobs:
        argv = [a.replace("{root}", root) for a in job["argv"]]
        results[job["id"]] = run_job(argv, os.path.join(root, job["id"] + ".log"))
    with open(os.path.join(root, "results.json"), "w") as f:
        json.dump(results, f)
    return all(code == 0 for code in results.values())


def running_batch(name):
    """Whether NAME is the scratch folder (KEY.PID.tmp) of a batch that is still running."""
    parts = name.split(".")
    if len(parts) != 3 or parts[2] != "tmp" or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
        return True
    except OSError:
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--cache")
    a = p.parse_args()
    with open(a.jobs) as f:
        text = f.read()
    jobs = json.loads(text)
    if not a.cache:
        run_all(jobs, a.out)
        print(json.dumps({"root": os.path.abspath(a.out), "cached": False}))
        return
    os.makedirs(a.cache, exist_ok=True)
    key = cache_key(text)
    root = os.path.join(os.path.abspath(a.cache), key)
    cached = os.path.exists(os.path.join(root, "results.json"))
    if not cached:
        # Made under a private name and renamed into place whole: a concurrent batch or one
        # killed half-way never leaves a root that looks complete. A batch with a failed job is
        # not kept for the next run (its folder goes at the next batch's clean-up).
        scratch = f"{root}.{os.getpid()}.tmp"
        shutil.rmtree(scratch, ignore_errors=True)
        if run_all(jobs, scratch):  # (no job's output holds the path it was written to)
            try:
                os.rename(scratch, root)
            except OSError:  # another batch made the same key meanwhile: keep that one
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            root = scratch
        for old in os.listdir(a.cache):
            path = os.path.join(os.path.abspath(a.cache), old)
            if path not in (root, scratch) and not running_batch(old):
                shutil.rmtree(path, ignore_errors=True)
    print(json.dumps({"root": root, "cached": cached}))


if __name__ == "__main__":
    main()
