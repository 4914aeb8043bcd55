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
        # auditwheel repair bundled the non-manylinux libraries: they resolve inside the wheel.
        libs = os.path.realpath(os.path.join(PACKAGE, "..", "onyx.libs"))
        for name in ("libdnnl", "libhwy", "libprotobuf", "libtbb", "libgomp"):
            lines = [ln for ln in out.splitlines() if ln.strip().startswith(name)]
            assert lines and all(libs in os.path.realpath(ln.split()[2]) for ln in lines), out


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


def _image_decoder(data: bytes):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("ImageDecoder", ["x"], ["y"])], "decode",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [None])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [None, None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.checker.check_model(model)
    sess = onyx.InferenceSession(model.SerializeToString())
    return sess.run(None, {"x": np.frombuffer(data, np.uint8)})[0]


def test_wheel_has_no_image_codecs():
    """The wheel is built with ONYX_IMAGE_CODECS=OFF (pyproject.toml): ImageDecoder still decodes
    BMP in-tree and refuses JPEG with an error that says why, and the module links no codec."""
    # A 1x1 24-bit BMP (pixel stored as B, G, R and a pad byte): decodes to RGB (10, 20, 30).
    header = b"BM" + (58).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little")
    dib = b"".join(v.to_bytes(n, "little") for v, n in (
        (40, 4), (1, 4), (1, 4), (1, 2), (24, 2), (0, 4), (4, 4), (2835, 4), (2835, 4), (0, 4), (0, 4)))
    assert _image_decoder(header + dib + bytes([30, 20, 10, 0])).tolist() == [[[10, 20, 30]]]
    with pytest.raises(Exception, match=r"JPEG decoding is not available: .*without image codecs"):
        _image_decoder(b"\xff\xd8\xff\xe0" + bytes(16))
    so = next(os.path.join(PACKAGE, n) for n in os.listdir(PACKAGE)
              if n.startswith("_onyx.") and n.endswith(".so"))
    out = subprocess.run(["ldd", so], capture_output=True, text=True, check=True).stdout
    for codec in ("libjpeg", "libpng", "libtiff", "libwebp", "libopenjp2"):
        assert codec not in out, out
