"""Shared by the client's unit tests: the environment a rank gets, child Pythons started with the
client on their path, and strict JSON reading of what the client wrote."""

import json
import os
import subprocess
import sys
import textwrap

PYTHON_DIR = os.environ.get("DDPDESK_PYTHON_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
CLIENT_VARIABLES = ("DDPDESK_MONITOR", "DDPDESK_TOKEN", "DDPDESK_RUN_DIR", "DDPDESK_STOP_FILE",
                    "DDPDESK_DEVICE", "DDPDESK_CLIENT_PID", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")


def clean_env(**extra):
    """This process's environment without any client variable, the client on PYTHONPATH, and
    `extra` on top."""
    env = {k: v for k, v in os.environ.items() if k not in CLIENT_VARIABLES}
    env["PYTHONPATH"] = PYTHON_DIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start(code, cwd=None, **extra):
    """A child python3 running `code` (dedented) in `cwd`, stdout and stderr piped."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=clean_env(**extra),
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(code, timeout=60, cwd=None, **extra):
    p = start(code, cwd=cwd, **extra)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def _refuse(name):
    raise ValueError("not JSON: " + name)


def strict_lines(path):
    """Every line of a JSONL file as an object; NaN/Infinity (which JSON does not have) refused."""
    with open(path, encoding="utf-8") as f:
        data = f.read()
    assert data.endswith("\n"), "file does not end with a whole line"
    return [json.loads(line, parse_constant=_refuse) for line in data.splitlines()]
