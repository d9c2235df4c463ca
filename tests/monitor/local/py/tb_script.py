#!/usr/bin/python3
"""A training script that logs to TensorBoard event files only, the way PyTorch's SummaryWriter
writes them (the bytes from tests/tensorboard/py/tb_events.py): rank 0 into runs/exp under its
working directory, rank 1 into runs/exp/rank1. Each step is one event with train/loss (float32)
and train/lr (float64); every third step adds eval/loss. Step 2's record is written in two
halves, several seconds apart, as a writer caught mid-write. It prints nothing that looks like a
loss, and writes the values it logged, exactly, to expected.rank-N in its working directory.

  tb_script.py TB_EVENTS_DIR STEPS PAUSE_S
"""
import os
import struct
import sys
import time

sys.path.insert(0, sys.argv[1])
import tb_events as tb  # noqa: E402


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def main():
    rank = int(os.environ["RANK"])
    steps, pause = int(sys.argv[2]), float(sys.argv[3])
    out = os.path.join("runs", "exp", *(["rank1"] if rank == 1 else []))
    os.makedirs(out, exist_ok=True)
    name = "events.out.tfevents.%d.testhost.%d.0" % (int(time.time()), os.getpid())
    with open(os.path.join(out, name), "ab") as f, open("expected.rank-%d" % rank, "w") as exp:
        f.write(tb.record(tb.event(time.time(), file_version="brain.Event:2")))
        f.flush()
        for step in range(1, steps + 1):
            loss, lr = f32(1.0 / (step + rank)), 0.01 * 0.9 ** step
            summary = (tb.summary_value("train/loss", tensor=tb.tensor_float_val(loss)) +
                       tb.summary_value("train/lr", tensor=tb.tensor_double_val(lr)))
            if step % 3 == 0:
                summary += tb.summary_value("eval/loss", tensor=tb.tensor_float_val(f32(2 * loss)))
            rec = tb.record(tb.event(time.time(), step=step, summary=summary))
            if step == 2:
                f.write(rec[:len(rec) // 2])
                f.flush()
                time.sleep(2.5)  # longer than the monitor's poll: it sees half a record
                rec = rec[len(rec) // 2:]
            f.write(rec)
            f.flush()
            exp.write("%d %r %r\n" % (step, loss, lr))
            print("rank %d wrote step %d" % (rank, step), flush=True)
            time.sleep(pause)


if __name__ == "__main__":
    main()
