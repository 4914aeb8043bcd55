"""What `pip install` of the onyx wheel puts into a venv (scripts/test_wheel.sh runs these against
the installed wheel; from the build tree they are skipped): the package files, its metadata and
dependencies, the CLI inside the package and the `onyx` console script."""
import importlib.metadata
import os
import subprocess
import sys
import sysconfig

import pytest

import onyx
import onyx.__main__
from conftest import DATA, ONYX_INSTALLED

pytestmark = pytest.mark.skipif(ONYX_INSTALLED is None, reason="onyx is not installed (build tree)")
PACKAGE = os.path.dirname(onyx.__file__)
SQUEEZENET = os.path.join(DATA, "light", "light_squeezenet.onnx")


def test_imported_from_site_packages():
    assert os.path.realpath(PACKAGE).startswith(os.path.realpath(sysconfig.get_paths()["purelib"]))


def test_package_files():
    names = set(os.listdir(PACKAGE))
    assert {"__init__.py", "__main__.py", "session.py", "options.py", "backend.py", "_onyx.pyi",
            "py.typed"} <= names
    assert any(n.startswith("_onyx.") and n.endswith(".so") for n in names), names
    cli = os.path.join(PACKAGE, "bin", "onyx")
    assert os.access(cli, os.X_OK)
    assert onyx.__main__.cli_path() == cli


def test_native_libraries_resolve():
    so = next(os.path.join(PACKAGE, n) for n in os.listdir(PACKAGE)
              if n.startswith("_onyx.") and n.endswith(".so"))
    for binary in (so, os.path.join(PACKAGE, "bin", "onyx")):
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        assert "not found" not in out, out


def test_metadata_and_dependencies():
    assert importlib.metadata.version("onyx") == onyx.__version__
    requires = " ".join(importlib.metadata.requires("onyx") or [])
    assert "numpy" in requires and "ml_dtypes" in requires and "onnx" in requires  # onnx: [backend]


def test_console_script_and_python_dash_m():
    script = os.path.join(sysconfig.get_paths()["scripts"], "onyx")
    for cmd in ([script], [sys.executable, "-m", "onyx"]):
        r = subprocess.run([*cmd, "info", SQUEEZENET], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "data_0" in r.stdout
        r = subprocess.run([*cmd, "ops"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "Conv" in r.stdout
