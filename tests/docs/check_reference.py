#!/usr/bin/env python3
"""test_docs_reference: every run-spec field and every `--help` flag of ddpdesk and
ddpdesk-worker is named in the reference doc (docs/reference.md).

Fields come from the field table's source (engine/protocol/run_spec_fields.cpp); the flags from
the binaries' own --help: the window's, the headless front end's, the comparison's and the
worker's. A field must appear as `key`; a flag as --flag (not part of a longer flag). A --no-X
flag counts as documented when --X is. Prints every one that is missing and exits 1.
Usage: check_reference.py DOC FIELDS_CPP DDPDESK WORKER
"""
import os
import re
import subprocess
import sys


def fail(message):
    print(f"check_reference: {message}")
    sys.exit(1)


def fields_of(source):
    text = open(source, encoding="utf-8").read()
    keys = re.findall(r'\{\s*"([a-z_]+)",\s*Kind::', text)
    keys += re.findall(r'(?:INT|TEXT)_FIELD\(\s*\w+,\s*"([a-z_]+)"', text)
    return keys


def help_flags(argv, env=None):
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    if run.returncode != 0 or "Options:" not in run.stdout:
        fail(f"`{' '.join(argv)}` exited {run.returncode} without a help text:\n"
             f"{run.stdout}{run.stderr}")
    flags = []
    for line in run.stdout.splitlines():
        m = re.match(r"\s+(?:-\w,)?(--[a-z0-9][a-z0-9-]*)", line)
        if m and m.group(1) != "--help":
            flags.append(m.group(1))
    if not flags:
        fail(f"`{' '.join(argv)}` listed no flags")
    return flags


def main():
    if len(sys.argv) != 5:
        fail("usage: check_reference.py DOC FIELDS_CPP DDPDESK WORKER")
    doc_path, fields_cpp, ddpdesk, worker = sys.argv[1:]
    doc = open(doc_path, encoding="utf-8").read()
    keys = fields_of(fields_cpp)
    if len(keys) < 10:
        fail(f"found only {len(keys)} fields in {fields_cpp}: has the table's form changed?")

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    commands = {
        "ddpdesk": [ddpdesk, "--help"],
        "ddpdesk --headless": [ddpdesk, "--headless", "--help"],
        # As the two help texts above tell the reader to ask for it.
        "ddpdesk --headless --compare": [ddpdesk, "--headless", "--compare", "--help"],
        "ddpdesk-worker": [worker, "--help"],
    }
    flags = {name: help_flags(argv, env) for name, argv in commands.items()}

    spec_flags = {f"--{k.replace('_', '-')}" for k in keys}
    missing = []
    for key in keys:
        if f"`{key}`" not in doc:
            missing.append(f"field `{key}` ({fields_cpp})")

    def documented(flag):
        if re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", doc):
            return True
        return flag.startswith("--no-") and documented("--" + flag[5:])

    where = {}
    for name, listed in flags.items():
        for flag in listed:
            where.setdefault(flag, []).append(f"`{name} --help`")
    for flag, names in where.items():
        if not documented(flag):
            missing.append(f"flag {flag} ({', '.join(names)})")
    # Every field found in the source has its flag in --help: a pattern that misread the table
    # shows here. (A field the pattern missed still has its flag checked above.)
    helped = set(flags["ddpdesk --headless"]) & spec_flags
    unknown = spec_flags - set(flags["ddpdesk --headless"])
    if unknown:
        missing.append(f"fields without a flag in `ddpdesk --headless --help`: {sorted(unknown)}")
    if missing:
        print(f"{doc_path} does not name:")
        for m in missing:
            print(f"  {m}")
        sys.exit(1)
    count = sum(len(v) for v in flags.values())
    print(f"{doc_path}: all {len(keys)} fields and {count} flags of {len(flags)} --help texts "
          f"named ({len(helped)} of them fields' flags)")


main()
