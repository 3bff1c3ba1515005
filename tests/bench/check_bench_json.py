#!/usr/bin/env python3
"""Runs one `strata bench` command and checks what it printed, never timings.

  check_bench_json.py [--mkdir DIR] [--key PATH=TYPES]... -- COMMAND...
  check_bench_json.py [--mkdir DIR] --expect-fail REGEX -- COMMAND...

Without --expect-fail the command must exit 0 and print one JSON object on
stdout in which every --key PATH exists with a value of one of TYPES.
PATH is dotted; a number indexes an array and `*` means every element (at
least one). TYPES joins with `|`: number (finite int or float, not bool),
int, string, bool, true, false (that bool value), array, object, null. With --expect-fail the command must
exit non-zero and its stderr must match REGEX.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys


def type_ok(value, name):
    if name == "number":
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value))
    if name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    checks = {"string": str, "bool": bool, "array": list, "object": dict}
    if name in checks:
        return isinstance(value, checks[name])
    if name == "null":
        return value is None
    if name in ("true", "false"):
        return value is (name == "true")
    raise SystemExit(f"check_bench_json: unknown type {name!r}")


def values_at(doc, parts, path):
    """Every value at `parts` below `doc`; raises KeyError naming what is missing."""
    if not parts:
        return [doc]
    head, rest = parts[0], parts[1:]
    if head == "*":
        if not isinstance(doc, list) or not doc:
            raise KeyError(f"{path}: expected a non-empty array at '*'")
        return [v for item in doc for v in values_at(item, rest, path)]
    if isinstance(doc, list):
        if not head.isdigit() or int(head) >= len(doc):
            raise KeyError(f"{path}: no element {head}")
        return values_at(doc[int(head)], rest, path)
    if not isinstance(doc, dict) or head not in doc:
        raise KeyError(f"{path}: no key {head!r}")
    return values_at(doc[head], rest, path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", action="append", default=[], metavar="PATH=TYPES")
    parser.add_argument("--expect-fail", metavar="REGEX")
    parser.add_argument("--mkdir", action="append", default=[], metavar="DIR")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    for d in args.mkdir:
        os.makedirs(d, exist_ok=True)

    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(run.stderr)
    if args.expect_fail is not None:
        if run.returncode == 0:
            print(f"FAIL: {' '.join(command)} exited 0; expected a failure")
            return 1
        if not re.search(args.expect_fail, run.stderr):
            print(f"FAIL: exit {run.returncode}, but stderr does not match {args.expect_fail!r}")
            return 1
        print(f"ok: exit {run.returncode}, stderr matches {args.expect_fail!r}")
        return 0

    if run.returncode != 0:
        print(run.stdout)
        print(f"FAIL: {' '.join(command)} exited {run.returncode}")
        return 1
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError as e:
        print(run.stdout)
        print(f"FAIL: stdout is not one JSON object: {e}")
        return 1
    failures = []
    for spec in args.key:
        path, _, types = spec.partition("=")
        try:
            values = values_at(doc, path.split("."), path)
        except KeyError as e:
            failures.append(str(e.args[0]))
            continue
        for v in values:
            if not any(type_ok(v, t) for t in types.split("|")):
                failures.append(f"{path}: {json.dumps(v)} is not {types}")
    if failures:
        print(json.dumps(doc, indent=2))
        for f in failures:
            print("FAIL:", f)
        return 1
    print(f"ok: exit 0, {len(args.key)} keys checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
