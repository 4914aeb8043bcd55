"""The XNNPACK kernels (ONYX_XNNPACK builds) on whole CNNs, planned with the AArch64 kernel set:
ONYX_XNNPACK_WITHOUT_ONEDNN=1 drops oneDNN's kernels, as an Arm build has none, so the layout
pass must place channels-last convolutions for XNNPACK's sake alone. The plans must run every
convolution, pool and product on XNNPACK, and the outputs must match ONNX Runtime.

Skipped where the build (ONYX_BUILD_DIR) was made without ONYX_XNNPACK."""
import json
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

BENCH_MODELS = os.environ.get(
    "ONYX_BENCH_MODELS", os.path.join(os.path.dirname(__file__), "..", "..", "bench", "models", "out"))
ARM_KERNELS = {**os.environ, "ONYX_XNNPACK_WITHOUT_ONEDNN": "1"}


def onyx(cli: str, *args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([cli, *args], capture_output=True, text=True, timeout=300, env=ARM_KERNELS)
    assert p.returncode == 0, p.stderr
    return p


def schedule(cli: str, path: str) -> list:
    return json.loads(onyx(cli, "plan", path, "--json").stdout)["schedule"]


@pytest.fixture(scope="module")
def xnnpack_cli(onyx_cli):
    p = subprocess.run([onyx_cli, "ops", "--json"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or "_xnnpack" not in p.stdout:
        pytest.skip("onyx built without ONYX_XNNPACK")
    return onyx_cli


def he(rng, *shape):
    fan_in = int(np.prod(shape[1:]))
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def cnn() -> onnx.ModelProto:
    """Strided, depthwise, grouped, dilated and 1x1 convolutions with Relu, Clip and a residual
    Add; MaxPool with ceil_mode; AveragePool with count_include_pad over pads; GlobalAveragePool;
    a Gemm with transB and a MatMul."""
    rng = np.random.default_rng(11)
    inits, nodes = [], []

    def conv(x, y, cin, cout, k, group=1, **attrs):
        inits.append(numpy_helper.from_array(he(rng, cout, cin // group, k, k), y + "_w"))
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), y + "_b"))
        nodes.append(helper.make_node("Conv", [x, y + "_w", y + "_b"], [y], name=y,
                                      kernel_shape=[k, k], group=group, **attrs))

    conv("x", "c0", 3, 24, 3, strides=[2, 2], pads=[1, 1, 1, 1])
    nodes.append(helper.make_node("Relu", ["c0"], ["r0"], name="r0"))
    nodes.append(helper.make_node("MaxPool", ["r0"], ["p0"], name="p0", kernel_shape=[3, 3],
                                  strides=[2, 2], ceil_mode=1))
    conv("p0", "dw", 24, 24, 3, group=24, pads=[1, 1, 1, 1])
    nodes.append(helper.make_node("Clip", ["dw", "lo", "hi"], ["dwc"], name="dwc"))
    inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
              numpy_helper.from_array(np.array(6, np.float32), "hi")]
    conv("dwc", "pw", 24, 24, 1)
    nodes.append(helper.make_node("Add", ["pw", "p0"], ["res"], name="res"))
    conv("res", "gc", 24, 32, 3, group=4, pads=[2, 2, 2, 2], dilations=[2, 2])
    nodes.append(helper.make_node("Relu", ["gc"], ["gr"], name="gr"))
    nodes.append(helper.make_node("AveragePool", ["gr"], ["ap"], name="ap", kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1], count_include_pad=1))
    nodes.append(helper.make_node("GlobalAveragePool", ["ap"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    inits.append(numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["fc"], name="fc", transB=1))
    inits.append(numpy_helper.from_array(rng.standard_normal((16, 10)).astype(np.float32), "mm_w"))
    nodes.append(helper.make_node("MatMul", ["fc", "mm_w"], ["y"], name="mm"))
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       [2, 3, 41, 37])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(cli: str, path: str, name: str, x: np.ndarray, tmp: str, threads: int) -> np.ndarray:
    xin = os.path.join(tmp, "x.pb")
    with open(xin, "wb") as f:
        f.write(numpy_helper.from_array(x, name).SerializeToString())
    out = os.path.join(tmp, f"out{threads}")
    onyx(cli, "run", path, "--input", f"{name}={xin}", "--output-dir", out, "--threads", str(threads))
    (only,) = os.listdir(out)
    t = onnx.TensorProto()
    with open(os.path.join(out, only), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def test_generated_cnn_plans_xnnpack_and_matches_ort(xnnpack_cli, tmp_path):
    path = str(tmp_path / "cnn.onnx")
    onnx.save(cnn(), path)
    steps = schedule(xnnpack_cli, path)
    impls = [s["impl"] for s in steps]
    assert not any(i.endswith("_onednn") for i in impls), impls
    convs = [s for s in steps if s["op"] == "NhwcConv"]
    assert len(convs) == 4 and all(s["impl"] == "NhwcConv_f32_xnnpack" for s in convs), impls
    assert {"NhwcMaxPool_f32_xnnpack", "NhwcAveragePool_f32_xnnpack"} <= set(impls), impls
    pools = [i for i in impls if i.startswith("NhwcAveragePool_f32_xnnpack")]
    assert pools == ["NhwcAveragePool_f32_xnnpack", "NhwcAveragePool_f32_xnnpack/global"], impls
    assert {"Gemm_f32_xnnpack", "MatMul_f32_xnnpack"} & set(impls), impls
    x = np.random.default_rng(3).standard_normal((2, 3, 41, 37)).astype(np.float32)
    (want,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for threads in (1, 2):
        got = run(xnnpack_cli, path, "x", x, str(tmp_path), threads)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"threads {threads}")


@pytest.mark.parametrize("model", ["squeezenet", "mobilenet_v2"])
def test_bench_cnn_runs_its_convolutions_on_xnnpack(xnnpack_cli, tmp_path, model):
    path = os.path.join(BENCH_MODELS, model + ".onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} missing: bench/models/make_bench_models.py makes it")
    steps = schedule(xnnpack_cli, path)
    convs = [s["impl"] for s in steps if s["op"] == "NhwcConv"]
    assert convs and all(i == "NhwcConv_f32_xnnpack" for i in convs), convs
    assert not any(s["op"] == "Conv" or s["impl"].endswith("_onednn") for s in steps)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    x = np.random.default_rng(5).uniform(0, 1, inp.shape).astype(np.float32)
    (want,) = sess.run(None, {inp.name: x})
    got = run(xnnpack_cli, path, inp.name, x, str(tmp_path), 2)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
