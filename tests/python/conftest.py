"""Shared fixtures: paths to the build, the onyx CLI and the onnx package's test data.

Which `onyx` the tests import:
- an installed one (a wheel in site-packages) when there is one: scripts/test_wheel.sh installs
  the wheel into a fresh venv and sets ONYX_TEST_INSTALLED=1, which makes a missing or
  build-tree onyx an error;
- otherwise the package the CMake build assembles in <build>/python/onyx (ONYX_BUILD_DIR, default
  build/).
"""
import importlib.util
import os
import sys

import onnx
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("ONYX_BUILD_DIR", "build"))  # relative: to the repo root
DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
# The node tests as files (scripts/setup.sh writes them with scripts/node_tests.py): "newest" from
# the pinned onnx, "onnx-1.22.0" as that release shipped them.
NODE_TESTS = os.path.join(BUILD, "node-tests")


def _installed_onyx():
    spec = importlib.util.find_spec("onyx")
    if spec is None or spec.origin is None:  # None, or a namespace package (a stray directory)
        return None
    # Installed means under a site-packages directory; the test venv of scripts/test_wheel.sh
    # may itself live inside the checkout (build/wheel/venv), so the path prefix is no test.
    if "site-packages" not in os.path.abspath(spec.origin).split(os.sep):
        return None  # the source or build tree, not an installed package
    return os.path.dirname(spec.origin)


ONYX_INSTALLED = _installed_onyx()
if os.environ.get("ONYX_TEST_INSTALLED") == "1" and ONYX_INSTALLED is None:
    raise RuntimeError("ONYX_TEST_INSTALLED=1 but no installed onyx package is importable")
if ONYX_INSTALLED is None:
    sys.path.insert(0, os.path.join(BUILD, "python"))


def pytest_report_header(config):
    import onyx  # noqa: PLC0415

    where = "installed wheel" if ONYX_INSTALLED else "build tree"
    return f"onyx {onyx.__version__}: {os.path.dirname(onyx.__file__)} ({where})"


@pytest.fixture(scope="session")
def onyx_cli():
    path = os.path.join(BUILD, "onyx")
    assert os.path.exists(path), f"{path} missing: run scripts/setup.sh"
    return path


@pytest.fixture(scope="session")
def light_dir():
    return os.path.join(DATA, "light")
