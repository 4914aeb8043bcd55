#!/usr/bin/env python3
"""Writes tests/conformance/arm64_node_tests.txt, the node tests the AArch64 CI stage runs under
qemu (all of them take about 4 CPU minutes per CPU model there, more than the stage's share of CI).

Input: the output of `onyx conformance --verbose` of the Arm build under qemu, which names the
kernels each test ran. Kept: every test that ran a kernel other than a reference one or a plain
view/copy (Highway, blocked gemm, tiled transpose, XNNPACK...), and every convolution, pooling and
matrix-product test whatever ran it (the operators the Arm kernels are for).
"""
import re
import sys
from typing import Set

# Operators whose node tests always run on Arm (name prefixes).
ALWAYS = re.compile(
    r"^test_(conv|convtranspose|averagepool|maxpool|globalaveragepool|globalmaxpool|lppool"
    r"|matmul|gemm|qlinearconv|qlinearmatmul|convinteger|matmulinteger)")
# Kernel names that are not fast kernels: reference loops, views, copies.
PLAIN = re.compile(r"_ref|_view$|_memcpy$|^DimsOf|_any$")


def select(log_path: str) -> Set[str]:
    """Names of the tests to keep, from a --verbose conformance log."""
    keep = set()
    for line in open(log_path, encoding="utf-8"):
        m = re.match(r"\w+ (test_\S+?): .*impls: ([^\]]*)\]", line)
        if not m:
            continue
        name = m.group(1)
        impls = [i.split("=")[-1].strip() for i in m.group(2).split(",")]
        if ALWAYS.match(name) or any(not PLAIN.search(i) for i in impls):
            keep.add(name)
    return keep


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: arm64_node_tests.py CONFORMANCE_VERBOSE_LOG > tests/conformance/arm64_node_tests.txt")
    print("# Node tests the AArch64 CI stage runs under qemu (scripts/test_arm64.sh): written by")
    print("# scripts/arm64_node_tests.py from `onyx conformance --verbose` of the Arm build.")
    for name in sorted(select(sys.argv[1])):
        print(name)


if __name__ == "__main__":
    main()
