"""Shared fixtures: paths to the build, the onyx CLI and the onnx package's test data."""
import os
import sys

import onnx
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ONYX_BUILD_DIR", os.path.join(ROOT, "build"))
sys.path[:0] = [os.path.join(BUILD, "python"), os.path.join(ROOT, "python")]

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


@pytest.fixture(scope="session")
def onyx_cli():
    path = os.path.join(BUILD, "onyx")
    assert os.path.exists(path), f"{path} missing: run scripts/setup.sh"
    return path


@pytest.fixture(scope="session")
def light_dir():
    return os.path.join(DATA, "light")
