"""How long onyx's OpenMP workers spin before they sleep, fixed before libgomp is loaded.

GNU OpenMP reads GOMP_SPINCOUNT once, when the library is loaded (with onyx's extension module).
With its default an idle worker here spun about 10 ms and then slept, and waking it for the next
run's first parallel region took 4-10 ms on the 2-core VM onyx is measured on: at 2 threads,
SqueezeNet requests 20 ms apart had a p90 latency of 12 ms against 2.9 ms for ONNX Runtime, whose
workers spin about 40 ms. One million spins gives about the same budget (docs/threading.md).
Users who set GOMP_SPINCOUNT or OMP_WAIT_POLICY themselves keep their setting, and nothing
changes if libgomp was already loaded by another module.
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator

SPIN_COUNT = "1000000"


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return False


@contextlib.contextmanager
def spin_budget() -> Iterator[None]:
    """Sets GOMP_SPINCOUNT while the extension module loads, then restores the environment so
    that child processes do not inherit it."""
    if any(k in os.environ for k in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")) or _libgomp_loaded():
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)
