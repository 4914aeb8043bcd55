"""The OpenMP spin budget set while onyx's extension loads (python/onyx/_openmp.py): libgomp
gets GOMP_SPINCOUNT only when the user set no wait policy of their own and libgomp is not loaded
yet, and the environment is restored afterwards so child processes do not inherit it."""
import os
import re
import subprocess
import sys

import pytest

import onyx
from onyx import _openmp


def _probe(code, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    # the onyx this test imported, installed or from the build tree
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(onyx.__file__))
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


_LOAD_AND_REPORT = """
import os
import onyx
print(os.environ.get('GOMP_SPINCOUNT', '-'), os.environ.get('OMP_WAIT_POLICY', '-'))
"""


def test_import_leaves_the_environment_as_it_was():
    assert _probe(_LOAD_AND_REPORT) == "- -"


def test_user_settings_are_kept():
    assert _probe(_LOAD_AND_REPORT, {"GOMP_SPINCOUNT": "5"}) == "5 -"
    assert _probe(_LOAD_AND_REPORT, {"OMP_WAIT_POLICY": "passive"}) == "- passive"


# What libgomp itself read when it loaded, in its own words (omp_display_env, OpenMP 5.1).
_LIBGOMP_REPORT = """
import ctypes, re, sys
import onyx
maps = open('/proc/self/maps').read()
if 'libgomp' not in maps:
    print('no libgomp')
    sys.exit(0)
sys.stdout.flush()
# The copy onyx loaded (the repaired wheel bundles its own under onyx.libs/), not libgomp.so.1.
path = next(ln.split()[-1] for ln in maps.splitlines() if 'libgomp' in ln.split()[-1])
ctypes.CDLL(path).omp_display_env(1)
"""


def _libgomp_spin_count(env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(onyx.__file__))
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-c", _LIBGOMP_REPORT], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    if "no libgomp" in p.stdout:
        pytest.skip("built without GNU OpenMP")
    m = re.search(r"GOMP_SPINCOUNT = '(\d+)'", p.stdout + p.stderr)
    assert m, p.stdout + p.stderr
    return int(m.group(1))


def test_libgomp_reads_the_budget():
    # libgomp's own default here is 300000 (no wait policy set); the package's is 1000000.
    assert _libgomp_spin_count() == int(_openmp.SPIN_COUNT)
    assert _libgomp_spin_count({"GOMP_SPINCOUNT": "5"}) == 5


def test_budget_is_set_while_loading_and_then_removed(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(_openmp, "_libgomp_loaded", lambda: False)
    with _openmp.spin_budget():
        assert os.environ["GOMP_SPINCOUNT"] == _openmp.SPIN_COUNT
    assert "GOMP_SPINCOUNT" not in os.environ


@pytest.mark.parametrize("user", [{"GOMP_SPINCOUNT": "7"}, {"OMP_WAIT_POLICY": "active"}])
def test_budget_yields_to_the_user(monkeypatch, user):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(_openmp, "_libgomp_loaded", lambda: False)
    for k, v in user.items():
        monkeypatch.setenv(k, v)
    with _openmp.spin_budget():
        assert os.environ.get("GOMP_SPINCOUNT") == user.get("GOMP_SPINCOUNT")
    assert os.environ.get("GOMP_SPINCOUNT") == user.get("GOMP_SPINCOUNT")


def test_nothing_is_set_once_libgomp_is_loaded(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setattr(_openmp, "_libgomp_loaded", lambda: True)
    with _openmp.spin_budget():
        assert "GOMP_SPINCOUNT" not in os.environ


def test_libgomp_is_loaded_after_import():
    # The extension links libgomp on x86 (oneDNN's runtime); this is what makes the budget
    # a load-time setting, and what the detection above looks for.
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("no /proc")
    with open("/proc/self/maps") as f:
        maps = f.read()
    if "libdnnl" not in maps:
        pytest.skip("built without oneDNN")
    assert _openmp._libgomp_loaded()
