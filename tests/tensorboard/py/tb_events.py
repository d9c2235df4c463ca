#!/usr/bin/python3
"""Writes TensorBoard event files for ddpdesk's tests, independently of ddpdesk's C++ encoder:
struct for the bytes and a bit-at-a-time CRC-32C of its own.

  tb_events.py OUT_DIR

OUT_DIR/pytorch/events.out.tfevents.1700000000.pyhost.4242.0 has the layout PyTorch's
SummaryWriter gives a file (torch/utils/tensorboard/summary.py's scalar(); the brain.Event:2
record first, with the writer's name as newer TensorBoards add it, then one event per
add_scalar call):
  train/loss   add_scalar(..., new_style=True)                   tensor, float_val, DT_FLOAT
  train/lr     add_scalar(..., new_style=True, double_precision=True)  tensor, double_val, DT_DOUBLE
  train/acc    a DT_FLOAT tensor whose value is in tensor_content (as TensorFlow writes them)
  old/simple   add_scalar(...) (the default, new_style=False)     simple_value
and ends in half of one more record, as if the writer had been killed mid-write.
OUT_DIR/simple/events.out.tfevents.1700000000.pyhost holds the simple_value events ddpdesk's
writer would write for the same points (the test compares the bytes).
The values: for i in 0..49, step = 10 * i, wall_time = 1700000000 + 0.5 * i,
loss = 1 / (i + 1), lr = 0.001 * 0.99 ** i, acc = i / 50, simple = 0.25 * i.
"""
import os
import struct
import sys

WALL0 = 1700000000.0
POINTS = 50


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked(crc32c(length))) + data +
            struct.pack("<I", masked(crc32c(data))))


def varint(n):
    n &= (1 << 64) - 1  # int64 as two's complement
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(field, wire_type):
    return varint((field << 3) | wire_type)


def length_delimited(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def event(wall_time, step=0, file_version=None, summary=None, source_writer=None):
    # Proto3: fields at their default are not written.
    out = b""
    if wall_time != 0:
        out += key(1, 1) + struct.pack("<d", wall_time)
    if step != 0:
        out += key(2, 0) + varint(step)
    if file_version is not None:
        out += length_delimited(3, file_version.encode())
    if summary is not None:
        out += length_delimited(5, summary)
    if source_writer is not None:  # source_metadata = 10 { writer = 1 }, newer TensorBoards
        out += length_delimited(10, length_delimited(1, source_writer.encode()))
    return out


def summary_value(tag, simple_value=None, tensor=None, plugin=None):
    out = length_delimited(1, tag.encode())
    if simple_value is not None:
        out += key(2, 5) + struct.pack("<f", simple_value)
    if tensor is not None:
        out += length_delimited(8, tensor)
    if plugin is not None:
        out += length_delimited(9, length_delimited(1, length_delimited(1, plugin.encode())))
    return length_delimited(1, out)  # Summary.value


def tensor_float_val(v):
    return key(1, 0) + varint(1) + length_delimited(5, struct.pack("<f", v))


def tensor_double_val(v):
    return key(1, 0) + varint(2) + length_delimited(6, struct.pack("<d", v))


def tensor_content_float(v):
    return key(1, 0) + varint(1) + length_delimited(4, struct.pack("<f", v))


def main():
    out_dir = sys.argv[1]
    os.makedirs(os.path.join(out_dir, "pytorch"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "simple"), exist_ok=True)

    pytorch = record(event(WALL0, file_version="brain.Event:2", source_writer="pytorch"))
    simple = record(event(WALL0, file_version="brain.Event:2"))
    for i in range(POINTS):
        step, wall = 10 * i, WALL0 + 0.5 * i
        loss, lr, acc, old = 1.0 / (i + 1), 0.001 * 0.99**i, i / 50.0, 0.25 * i
        pytorch += record(event(wall, step, summary=summary_value(
            "train/loss", tensor=tensor_float_val(loss), plugin="scalars")))
        pytorch += record(event(wall, step, summary=summary_value(
            "train/lr", tensor=tensor_double_val(lr), plugin="scalars")))
        pytorch += record(event(wall, step, summary=summary_value(
            "train/acc", tensor=tensor_content_float(acc), plugin="scalars")))
        pytorch += record(event(wall, step, summary=summary_value("old/simple", simple_value=old)))
        simple += record(event(wall, step, summary=summary_value("loss", simple_value=loss)))
    last = record(event(WALL0 + 99, 9999, summary=summary_value("train/loss", simple_value=1.0)))
    pytorch += last[: len(last) // 2]

    with open(os.path.join(out_dir, "pytorch", "events.out.tfevents.1700000000.pyhost.4242.0"),
              "wb") as f:
        f.write(pytorch)
    with open(os.path.join(out_dir, "simple", "events.out.tfevents.1700000000.pyhost"), "wb") as f:
        f.write(simple)


if __name__ == "__main__":
    main()
