#!/usr/bin/env python3
"""Adds newly passing tests from an `onyx conformance --json` result to expected_pass.txt.

Never removes a line: a test that stops passing is a regression to fix, not to unlist.
"""
import json
import re
import sys
from pathlib import Path

EXPECTED = Path(__file__).resolve().parent.parent / "tests" / "conformance" / "expected_pass.txt"


def main():
    result = json.loads(Path(sys.argv[1]).read_text())
    lines = EXPECTED.read_text().splitlines()
    patterns = [re.compile(l.split("#")[0].strip()) for l in lines if l.split("#")[0].strip()]
    added = []
    for t in result["tests"]:
        if t["status"] == "pass" and not any(p.fullmatch(t["name"]) for p in patterns):
            added.append(t["name"])
    if added:
        EXPECTED.write_text("\n".join(lines + sorted(added)) + "\n")
    print(f"added {len(added)} tests to {EXPECTED.name}")


if __name__ == "__main__":
    main()
