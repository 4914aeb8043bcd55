"""onyx.check and `onyx check`: the report's differences are the fast and reference sessions'
differences, its bound is 2*K*u*S with S computed independently (numpy float64), the JSON report
parses with its fields, and the CLI exits 1 only when a step is above its bound."""
import json
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

U = 2.0 ** -24
STEP_FIELDS = {"step", "name", "op", "impl", "nodes", "values", "compared", "flagged", "bound_kind",
               "bound", "elements", "max_abs", "max_rel", "max_ulp", "ratio", "note"}


def matmul_model(k=300, m=6, n=20, seed=0):
    """y = a @ b with b a [k, n] initializer, and z = Softmax(y) after it."""
    rng = np.random.default_rng(seed)
    b = (rng.standard_normal((k, n)) * 0.1).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm"),
         helper.make_node("Softmax", ["y"], ["z"], name="sm", axis=-1)],
        "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), b


def step_of(report, node):
    (c,) = [c for c in report["checks"] if node in c["nodes"]]
    return c


def test_differences_and_bound_match_an_independent_computation(tmp_path):
    model, b = matmul_model()
    path = str(tmp_path / "mm.onnx")
    onnx.save(model, path)
    a = np.random.default_rng(1).standard_normal((6, 300)).astype(np.float32)
    report = onyx.check(path, {"a": a}, json_path=tmp_path / "r.json")
    assert report["flagged"] == 0, report["table"]
    assert report["compared"] == report["steps"]

    fast = onyx.InferenceSession(path).run(None, {"a": a})
    opts = onyx.SessionOptions()
    opts.reference_kernels = True
    ref = onyx.InferenceSession(path, opts).run(None, {"a": a})
    mm = step_of(report, "MatMul 'mm'")
    assert mm["values"] == ["y"]
    assert mm["elements"] == 6 * 20
    assert mm["max_abs"] == pytest.approx(float(np.max(np.abs(fast[0] - ref[0]))), rel=1e-6, abs=0)
    # K = 300 products + 1 node; S = |a| @ |b| in float64.
    assert mm["bound"] == "|d| <= 2*K*u*S, K=301"
    s = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    d = np.abs(fast[0].astype(np.float64) - ref[0])
    assert mm["ratio"] == pytest.approx(float(np.max(d / (2 * 301 * U * s))), rel=1e-4, abs=1e-12)

    # Softmax: normwise, K = the axis length + 1 node, scaled by the largest output.
    sm = step_of(report, "Softmax 'sm'")
    assert sm["bound_kind"] == "normwise"
    assert sm["bound"] == "|d| <= 8*K*u*max|ref|, K=21"

    on_disk = json.loads((tmp_path / "r.json").read_text())
    assert on_disk["flagged"] == 0 and on_disk["unit_roundoff"] == U
    assert {"model", "steps", "compared", "flagged", "seconds", "checks"} <= set(on_disk)
    for c in on_disk["checks"]:
        assert STEP_FIELDS <= set(c), c


def test_generated_inputs_and_bytes():
    model, _ = matmul_model(k=16, m=2, n=3)
    report = onyx.check(model.SerializeToString())
    assert report["model"] == "<bytes>"
    assert report["flagged"] == 0
    assert "MatMul" in report["table"]


def test_bad_feeds_and_options_are_errors():
    model, _ = matmul_model(k=16, m=2, n=3)
    data = model.SerializeToString()
    with pytest.raises(onyx.InvalidArgument, match="'nope'"):
        onyx.check(data, {"nope": np.zeros(2, np.float32)})
    with pytest.raises(onyx.InvalidArgument, match="conv_algorithm"):
        onyx.check(data, conv_algorithm="fast")


def test_cli_report_json_and_exit_status(onyx_cli, tmp_path):
    model, _ = matmul_model(k=64, m=4, n=8)
    path = str(tmp_path / "mm.onnx")
    onnx.save(model, path)
    out = tmp_path / "report.json"
    p = subprocess.run([onyx_cli, "check", path, "--json", str(out)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "MatMul" in p.stdout and "OK" in p.stdout and "FLAG" not in p.stdout
    report = json.loads(out.read_text())
    assert report["flagged"] == 0 and report["steps"] == len(report["checks"])
    p = subprocess.run([onyx_cli, "check", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("usage: onyx check")
    p = subprocess.run([onyx_cli, "check", path, "--threads", "0"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "--threads" in p.stderr


def test_winograd_step_is_bounded_by_its_patch_magnitude(tmp_path):
    """A 3x3 convolution the planner gives a Winograd kernel is held to 2*K*u*S_patch
    (docs/semantics/conv.md [CONV-12]); S_patch computed here in float64."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((64, 48, 3, 3)) * 0.1).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48, 28, 28])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 28, 28])],
        [numpy_helper.from_array(w, "w")])
    path = str(tmp_path / "conv.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    # Inputs over eight binades, so that the patch and window magnitudes differ.
    x = (rng.standard_normal((1, 48, 28, 28)) * 2.0 ** rng.integers(-4, 4, (1, 48, 28, 28))
         ).astype(np.float32)
    report = onyx.check(path, {"x": x})
    conv = step_of(report, "Conv 'conv'")
    if "winograd" not in conv["impl"]:
        pytest.skip(f"the planner chose {conv['impl']} here")
    assert report["flagged"] == 0, report["table"]
    assert conv["bound"] == "|d| <= 2*K*u*S_patch, K=433"  # 48*3*3 products + 1 node
    fast = onyx.InferenceSession(path).run(None, {"x": x})[0].astype(np.float64)
    opts = onyx.SessionOptions()
    opts.reference_kernels = True
    ref = onyx.InferenceSession(path, opts).run(None, {"x": x})[0]
    # P_c(o): the largest |x| of channel c over o's window (pad 1) widened by 3 on every side.
    padded = np.pad(np.abs(x[0].astype(np.float64)), ((0, 0), (4, 4), (4, 4)))
    patch = np.lib.stride_tricks.sliding_window_view(padded, (9, 9), axis=(1, 2)).max(axis=(3, 4))
    s_patch = np.einsum("mc,cij->mij", np.abs(w.astype(np.float64)).sum(axis=(2, 3)), patch)
    d = np.abs(fast - ref)[0]
    assert conv["ratio"] == pytest.approx(float(np.max(d / (2 * 433 * U * s_patch))), rel=1e-4)


def test_function_steps_allow_a_few_ulp_of_the_result():
    """Sigmoid near 0: the input's magnitude S = |x| is tiny but the result is about 0.5, so the
    kernels' own few-ulp errors need the 16*u*|ref| term; the report's ratio matches it."""
    x = np.linspace(-1e-3, 1e-3, 4096, dtype=np.float32).reshape(64, 64)
    g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"], name="sig")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    report = onyx.check(data, {"x": x})
    sig = step_of(report, "Sigmoid 'sig'")
    assert sig["bound"] == "|d| <= 2*K*u*S + 16*u*|ref|, K=2"
    assert report["flagged"] == 0, report["table"]
    fast = onyx.InferenceSession(data).run(None, {"x": x})[0].astype(np.float64)
    opts = onyx.SessionOptions()
    opts.reference_kernels = True
    ref = onyx.InferenceSession(data, opts).run(None, {"x": x})[0].astype(np.float64)
    allowed = (2 * 2 * np.abs(x.astype(np.float64)) + 16 * np.abs(ref)) * U
    assert sig["ratio"] == pytest.approx(float(np.max(np.abs(fast - ref) / allowed)), rel=1e-6,
                                         abs=1e-12)
