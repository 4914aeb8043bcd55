"""`onyx prune` (docs/sparsity.md) against numpy recomputations of every threshold and mask, the
written models in ONNX Runtime, and sparse_initializer models (COO, both index forms) loaded by
onyx and compared with ONNX Runtime."""
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

RNG = np.random.default_rng(21)
# name → (op, weight): a 1x1 Conv, a 3x3 Conv, a MatMul [K, N] and a Gemm with transB ([N, K]).
WEIGHTS = {
    "w1": RNG.standard_normal((6, 4, 1, 1)).astype(np.float32),
    "w3": RNG.standard_normal((6, 6, 3, 3)).astype(np.float32),
    "b1": RNG.standard_normal((150, 10)).astype(np.float32),
    "b2": RNG.standard_normal((7, 10)).astype(np.float32),
}
# The group axis (output channels) of each weight and whether it is the outer axis.
OUT_AXIS = {"w1": 0, "w3": 0, "b1": 1, "b2": 0}
ORDER = ["w1", "w3", "b1", "b2"]  # graph order


def hand_model():
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1x1"),
        helper.make_node("Conv", ["c1", "w3"], ["c3"], name="conv3x3", pads=[1, 1, 1, 1]),
        helper.make_node("Flatten", ["c3"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "b1"], ["m"], name="fc1"),
        helper.make_node("Gemm", ["m", "b2"], ["y"], name="fc2", transB=1),
    ]
    g = helper.make_graph(
        nodes, "hand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7])],
        [numpy_helper.from_array(w, n) for n, w in WEIGHTS.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("prune") / "hand.onnx"
    onnx.save(hand_model(), str(p))
    return str(p)


def prune(cli, src, out, *args):
    p = subprocess.run([cli, "prune", src, "-o", str(out), "--samples", "0", *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def weights_of(path):
    m = onnx.load(str(path))
    w = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for sp in m.graph.sparse_initializer:
        dense = np.zeros(list(sp.dims), np.float32)
        dense.reshape(-1)[numpy_helper.to_array(sp.indices)] = numpy_helper.to_array(sp.values)
        w[sp.values.name] = dense
    return w


def printed_thresholds(stdout):
    """layer → threshold from the table."""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 5 and f[0] in WEIGHTS:
            out[f[0]] = float(f[3])
    return out


def group_scores(w, name, block):
    """Per element: the RMS of its group of `block` consecutive output channels."""
    axis = OUT_AXIS[name]
    m = np.moveaxis(w.reshape(w.shape[0], -1) if axis == 0 else w, axis, 0).astype(np.float64)
    s = np.empty_like(m)
    for c0 in range(0, m.shape[0], block):
        s[c0:c0 + block] = np.sqrt(np.mean(m[c0:c0 + block] ** 2, axis=0))
    return np.moveaxis(s, 0, axis).reshape(w.shape)


def unique_group_scores(w, name, block):
    axis = OUT_AXIS[name]
    m = np.moveaxis(w.reshape(w.shape[0], -1) if axis == 0 else w, axis, 0).astype(np.float64)
    return np.concatenate([np.sqrt(np.mean(m[c0:c0 + block] ** 2, axis=0))
                           for c0 in range(0, m.shape[0], block)])


@pytest.mark.parametrize("block", [1, 4])
def test_relative_is_the_per_layer_percentile(onyx_cli, model_path, tmp_path, block):
    out = tmp_path / "p.onnx"
    stdout = prune(onyx_cli, model_path, out, "--method", "relative", "--sparsity", "0.6",
                   "--block", str(block))
    got, thr = weights_of(out), printed_thresholds(stdout)
    for name, w in WEIGHTS.items():
        t = np.percentile(unique_group_scores(w, name, block), 60)
        assert thr[name] == pytest.approx(t, rel=1e-5)
        want = np.where(group_scores(w, name, block) <= t, 0, w)
        np.testing.assert_array_equal(got[name], want, err_msg=name)
        assert 0.55 < np.mean(got[name] == 0) < 0.75


@pytest.mark.parametrize("layers,changed", [("1x1", {"w1"}), ("conv", {"w1", "w3"}),
                                            ("fc", {"b1", "b2"}), ("all", set(WEIGHTS))])
def test_layers_pick_the_weights(onyx_cli, model_path, tmp_path, layers, changed):
    out = tmp_path / "p.onnx"
    prune(onyx_cli, model_path, out, "--layers", layers, "--sparsity", "0.5")
    got = weights_of(out)
    for name, w in WEIGHTS.items():
        assert np.array_equal(got[name], w) == (name not in changed), name


@pytest.mark.parametrize("method", ["flat", "triangular"])
def test_span_methods(onyx_cli, model_path, tmp_path, method):
    out = tmp_path / "p.onnx"
    stdout = prune(onyx_cli, model_path, out, "--method", method, "--sparsity", "0.3")
    f = float(re.search(r"span fraction f = ([0-9.e+-]+)", stdout).group(1))
    spans = [np.abs(WEIGHTS[n]).max() for n in ORDER]
    if method == "flat":
        want = [f * min(spans)] * 4
    else:
        want = [f * (spans[0] + (spans[-1] - spans[0]) * i / 3) for i in range(4)]
    thr, got = printed_thresholds(stdout), weights_of(out)
    zeros = total = 0
    for name, t in zip(ORDER, want):
        assert thr[name] == pytest.approx(t, rel=1e-5), name
        a = np.abs(WEIGHTS[name])
        clear = np.abs(a - t) > 1e-5 * t  # away from the threshold's printed precision
        np.testing.assert_array_equal((got[name] == 0)[clear], (a <= t)[clear], err_msg=name)
        zeros += np.sum(got[name] == 0)
        total += a.size
    assert 0.3 <= zeros / total < 0.32  # the smallest f that reaches the target


def test_written_models_run_in_ort_and_match_onyx(onyx_cli, model_path, tmp_path):
    x = RNG.random((1, 4, 5, 5), dtype=np.float32)
    outs = {}
    for form, extra in [("dense", []), ("sparse", ["--sparse-initializers"])]:
        out = tmp_path / f"{form}.onnx"
        prune(onyx_cli, model_path, out, "--sparsity", "0.7", "--block", "2", *extra)
        m = onnx.load(str(out))
        # onnx's shape inference does not read sparse initializers' shapes: full check on dense.
        onnx.checker.check_model(m, full_check=form == "dense")
        if form == "sparse":
            assert {sp.values.name for sp in m.graph.sparse_initializer} == set(WEIGHTS)
            assert not m.graph.initializer
        ref = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        outs[form] = ref.run(None, {"x": x})[0]
        np.testing.assert_allclose(onyx.InferenceSession(str(out)).run(None, {"x": x})[0],
                                   outs[form], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outs["sparse"], outs["dense"], rtol=1e-5, atol=1e-6)


def test_report_and_labelled_set(onyx_cli, model_path, tmp_path):
    xs = RNG.random((5, 4, 5, 5), dtype=np.float32)
    ref = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    labels = [int(np.argmax(ref.run(None, {"x": x[None]})[0])) for x in xs]
    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(xs).SerializeToString())
    (tmp_path / "labels.txt").write_text("\n".join(map(str, labels)) + "\n")
    p = subprocess.run([onyx_cli, "prune", model_path, "-o", str(tmp_path / "p.onnx"),
                        "--sparsity", "0.2", "--samples", "3", "--inputs", str(tmp_path / "x.pb"),
                        "--labels", str(tmp_path / "labels.txt")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "top-1 dense 100.00%" in p.stdout, p.stdout
    assert re.search(r"^  y +[0-9.e+-]+ +[0-9.e+-]+ +[0-9.e+-]+ +\d/3$", p.stdout, re.M), p.stdout
    assert re.search(r"total: 4 layers, \d+ of 1918 weights zero", p.stdout), p.stdout


@pytest.mark.parametrize("args,needle", [
    (["--method", "magic"], "--method must be relative, flat or triangular"),
    (["--sparsity", "1.5"], "--sparsity must be a number in [0, 1]"),
    (["--sparsity", "half"], "--sparsity must be a number in [0, 1]"),
    (["--block", "0"], "--block"),
    (["--layers", "3x3"], "--layers must be all, 1x1, conv or fc"),
    (["--labels", "l.txt"], "--inputs and --labels go together"),
    (["--frobnicate"], "unknown option --frobnicate"),
])
def test_bad_options(onyx_cli, model_path, tmp_path, args, needle):
    p = subprocess.run([onyx_cli, "prune", model_path, "-o", str(tmp_path / "p.onnx"), *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and needle in p.stderr, p.stderr


def test_missing_output_and_external_data(onyx_cli, model_path, tmp_path):
    p = subprocess.run([onyx_cli, "prune", model_path], capture_output=True, text=True)
    assert p.returncode == 1 and "missing -o OUT" in p.stderr
    ext = tmp_path / "ext.onnx"
    onnx.save(hand_model(), str(ext), save_as_external_data=True, size_threshold=0,
              location="w.bin")
    p = subprocess.run([onyx_cli, "prune", str(ext), "-o", str(tmp_path / "p.onnx")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "external data" in p.stderr and "'w1'" in p.stderr, p.stderr


def test_nan_and_inf_weights_are_kept(onyx_cli, tmp_path):
    m = hand_model()
    w = WEIGHTS["w1"].copy()  # the first layer: triangular's thresholds start from its span
    w[0, 0, 0, 0], w[1, 0, 0, 0], w[2, 0, 0, 0] = np.nan, np.inf, -np.inf
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, "w1"))
    src = tmp_path / "nan.onnx"
    onnx.save(m, str(src))
    for method in ("relative", "flat", "triangular"):
        prune(onyx_cli, str(src), tmp_path / "p.onnx", "--method", method, "--sparsity", "0.5")
        got = weights_of(tmp_path / "p.onnx")
        assert np.isnan(got["w1"][0, 0, 0, 0]) and got["w1"][1, 0, 0, 0] == np.inf, method
        assert got["w1"][2, 0, 0, 0] == -np.inf, method
        for name in WEIGHTS:  # no layer wiped out by an infinite threshold
            assert 0 < np.mean(got[name] == 0) < 0.9, (method, name)


# sparse_initializer models made with onnx.helper, both index forms.
def sparse_model(w, flat):
    nz = np.flatnonzero(w)
    if flat:
        idx = helper.make_tensor("i", TensorProto.INT64, [len(nz)], nz)
    else:
        coords = np.stack(np.unravel_index(nz, w.shape), axis=1)
        idx = helper.make_tensor("i", TensorProto.INT64, list(coords.shape), coords.reshape(-1))
    vals = helper.make_tensor("w", TensorProto.FLOAT, [len(nz)], w.reshape(-1)[nz])
    sp = helper.make_sparse_tensor(vals, idx, list(w.shape))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    g = helper.make_graph(
        nodes, "sp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4])],
        sparse_initializer=[sp])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("flat", [True, False], ids=["flat_indices", "coordinate_indices"])
def test_sparse_initializer_loads_and_matches_ort(tmp_path, flat):
    w = RNG.standard_normal((16, 8, 1, 1)).astype(np.float32)
    w[RNG.random(w.shape) < 0.7] = 0
    m = sparse_model(w, flat)
    onnx.checker.check_model(m)
    path = str(tmp_path / "sp.onnx")
    onnx.save(m, path)
    x = RNG.standard_normal((1, 8, 4, 4)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = onyx.InferenceSession(path).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, np.maximum(np.einsum("oi,nihw->nohw", w[:, :, 0, 0], x), 0),
                               rtol=1e-4, atol=1e-5)


def test_bad_sparse_initializer_is_a_clear_error(tmp_path):
    w = np.zeros((16, 8, 1, 1), np.float32)
    w[0, 0, 0, 0] = w[3, 2, 0, 0] = 1
    m = sparse_model(w, True)
    m.graph.sparse_initializer[0].indices.int64_data[1] = 16 * 8  # one past the end
    path = str(tmp_path / "bad.onnx")
    onnx.save(m, path)
    with pytest.raises(Exception, match=r"sparse initializer 'w'.*index 128 of value 1 is out of range"):
        onyx.InferenceSession(path)


def test_python_prune_matches_the_cli(onyx_cli, model_path, tmp_path):
    prune(onyx_cli, model_path, tmp_path / "cli.onnx", "--method", "triangular", "--sparsity",
          "0.4", "--block", "2", "--layers", "conv")
    rep = onyx.prune(model_path, str(tmp_path / "py.onnx"), method="triangular", sparsity=0.4,
                     block=2, layers="conv")
    cli, py = weights_of(tmp_path / "cli.onnx"), weights_of(tmp_path / "py.onnx")
    for name in WEIGHTS:
        np.testing.assert_array_equal(py[name], cli[name], err_msg=name)
    assert [r["initializer"] for r in rep["layers"]] == ["w1", "w3"]
    assert rep["zeros"] == sum(int(np.sum(py[n] == 0)) for n in ("w1", "w3"))
    assert rep["elements"] == 24 + 324 and rep["sparsity"] >= 0.4
    with pytest.raises(onyx.InvalidArgument, match="--method must be"):
        onyx.prune(model_path, str(tmp_path / "x.onnx"), method="nope")
