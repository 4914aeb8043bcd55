"""What the fast kernels may use here: the CPU's features under the ISA cap (ONYX_ISA,
docs/isa.md). Tests that assert which kernel a plan picks ask here first, so that they hold on
CPUs without AVX-512 or VNNI and under a lowered cap."""
import functools
import os
import subprocess

LEVELS = ("scalar", "sse4", "avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx")


def capped_below(level: str) -> bool:
    """ONYX_ISA names a level below `level`."""
    cap = os.environ.get("ONYX_ISA", "")
    return cap in LEVELS and LEVELS.index(cap) < LEVELS.index(level)


def has_avx512() -> bool:
    """AVX-512 on this CPU, and not capped below it."""
    if capped_below("avx512"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


@functools.lru_cache(maxsize=None)
def cap_level(cli: str) -> str:
    """The level the kernels run at here: the `cap:` line of `onyx info --cpu` (the machine's
    level, or ONYX_ISA's when lower). Asked once per process."""
    p = subprocess.run([cli, "info", "--cpu"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return next(line.split()[1] for line in p.stdout.splitlines() if line.startswith("cap:"))
