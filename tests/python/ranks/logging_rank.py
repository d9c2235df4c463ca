"""A rank of a script run for test_python_client: deterministic losses with every digit a double
has, a learning rate and a gradient norm every step, and on step 7 the bad input (NaN,
infinities, the largest double, an integer no double holds, odd names, a name longer than the
wire allows, an empty one). It writes what it logged to <run_dir>/logged-rank-N.json. With
FAIL_AT=N in its environment it raises at step N instead (after writing what it logged).
Usage: logging_rank.py STEPS"""

import json
import math
import os
import random
import sys

import ddpdesk

steps = int(sys.argv[1])
rank = ddpdesk.rank()
rng = random.Random(1234 + rank)
logged = {"loss": [], "lr": [], "grad_norm": []}
fail_at = int(os.environ.get("FAIL_AT", "0"))


def write_logged():
    with open(os.path.join(ddpdesk.run_dir(), "logged-rank-%d.json" % rank), "w") as f:
        json.dump(logged, f)


for step in range(1, steps + 1):
    if step == fail_at:
        write_logged()
        raise RuntimeError("boom at step %d" % step)
    loss = rng.random() * 3
    lr = 0.001 * step
    grad = rng.lognormvariate(0, 1)
    extra = {}
    if step == 7:
        extra = {"nan scalar": math.nan, "inf": math.inf, "huge": 1.7976931348623157e308,
                 "bigint": 10**400, 'odd name é/σ "q"': 42.5, "x" * 300: 1.0, "": 5.0}
    ddpdesk.log(step=step, loss=loss, samples=step * 64, lr=lr, grad_norm=grad, **extra)
    logged["loss"].append(loss)
    logged["lr"].append(lr)
    logged["grad_norm"].append(grad)
write_logged()
