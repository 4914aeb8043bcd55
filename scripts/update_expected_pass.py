#!/usr/bin/env python3
"""Adds newly passing tests from an `onyx conformance --json` result to an expected-pass list:
tests/conformance/expected_pass.txt (the pinned onnx's node tests, build/node-tests/newest) or the
file given second (expected_pass_onnx_1_22.txt for build/node-tests/onnx-1.22.0).

Never removes a line: a test that stops passing is a regression to fix, not to unlist.
"""
import json
import re
import sys
from pathlib import Path

EXPECTED = Path(__file__).resolve().parent.parent / "tests" / "conformance" / "expected_pass.txt"


def main():
    result = json.loads(Path(sys.argv[1]).read_text())
    expected = Path(sys.argv[2]) if len(sys.argv) > 2 else EXPECTED
    lines = expected.read_text().splitlines()
    patterns = [re.compile(l.split("#")[0].strip()) for l in lines if l.split("#")[0].strip()]
    added = []
    for t in result["tests"]:
        if t["status"] == "pass" and not any(p.fullmatch(t["name"]) for p in patterns):
            added.append(t["name"])
    if added:
        expected.write_text("\n".join(lines + sorted(added)) + "\n")
    print(f"added {len(added)} tests to {expected.name}")


if __name__ == "__main__":
    main()
