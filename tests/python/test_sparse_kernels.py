"""Block-sparse kernels end to end: a small channels-last CNN and a fully connected layer pruned
in blocks of 16 or 32 output channels (as `onyx prune --block 16|32` does) take the sparse kernels
in that width where
the zero blocks reach the threshold and the dense ones elsewhere, as the plan shows; ONYX_SPARSE_KERNELS=0
turns them off; outputs match ONNX Runtime (the oracle) either way."""
import json
import os
import platform
import subprocess

import numpy as np
import onnx
import onyx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the sparse kernels are registered on x86")


def _block_pruned(rng, cout: int, cin: int, zero: float, block: int = 16) -> np.ndarray:
    """W [cout, cin] with a `zero` fraction of its (`block` output channels, one input) blocks
    zero."""
    w = rng.standard_normal((cout, cin)).astype(np.float32) * np.float32(np.sqrt(2.0 / cin))
    blocks = (cout + block - 1) // block
    order = rng.permutation(blocks * cin)[: int(round(zero * blocks * cin))]
    for i in order:
        b, ci = divmod(int(i), cin)
        w[b * block:(b + 1) * block, ci] = 0
    return w


def pruned_model() -> onnx.ModelProto:
    """conv_a (1x1, 70% zero blocks, BN-like bias, Relu), conv_b (1x1 stride 2, 50% in blocks of
    32, + residual from a strided 1x1 projection), conv_dense (1x1, 10% zero blocks: stays dense), then a Gemm
    (60% zero blocks, transB) on the pooled features."""
    rng = np.random.default_rng(5)
    inits, nodes = [], []

    def conv(x, y, w, stride=1, bias=True):
        name = "w_" + y
        inits.append(numpy_helper.from_array(w[:, :, None, None], name))
        ins = [x, name]
        if bias:
            inits.append(numpy_helper.from_array(rng.standard_normal(w.shape[0]).astype(np.float32), name + "_b"))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [y], name=y, kernel_shape=[1, 1], strides=[stride, stride]))

    conv("x", "a", _block_pruned(rng, 72, 40, 0.7))
    nodes.append(helper.make_node("Relu", ["a"], ["ar"], name="relu_a"))
    conv("ar", "b", _block_pruned(rng, 96, 72, 0.5, block=32), stride=2)
    conv("ar", "proj", _block_pruned(rng, 96, 72, 0.6), stride=2, bias=False)
    nodes.append(helper.make_node("Add", ["b", "proj"], ["s"], name="sum"))
    nodes.append(helper.make_node("Relu", ["s"], ["sr"], name="relu_s"))
    conv("sr", "dense", _block_pruned(rng, 64, 96, 0.1))
    nodes.append(helper.make_node("GlobalAveragePool", ["dense"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    inits.append(numpy_helper.from_array(_block_pruned(rng, 40, 64, 0.6), "fc_w"))  # [N, K]
    inits.append(numpy_helper.from_array(rng.standard_normal(40).astype(np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="fc", transB=1))
    g = helper.make_graph(nodes, "pruned",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 40, 15, 15])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 40])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sparse") / "pruned.onnx")
    onnx.save(pruned_model(), path)
    return path


def impls(cli, path, env=None):
    p = subprocess.run([cli, "plan", path, "--json"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    assert p.returncode == 0, p.stderr
    return {s["node"]: s["impl"] for s in json.loads(p.stdout)["schedule"]}


def test_plan_takes_the_sparse_kernels_above_the_threshold(onyx_cli, model_path):
    on = impls(onyx_cli, model_path)
    assert {n: on[n] for n in ("a", "b", "proj", "dense", "fc")} == {
        "a": "NhwcConv_f32_sparse/block16", "b": "NhwcConv_f32_sparse/block32",
        "proj": "NhwcConv_f32_sparse/block16", "dense": "NhwcConv_f32_onednn",
        "fc": "Gemm_f32_sparse/block16"}, on
    off = impls(onyx_cli, model_path, {"ONYX_SPARSE_KERNELS": "0"})
    assert not [n for n, i in off.items() if "sparse" in i], off


@pytest.mark.parametrize("sparse", ["1", "0"])
def test_outputs_match_onnxruntime(model_path, sparse, monkeypatch):
    monkeypatch.setenv("ONYX_SPARSE_KERNELS", sparse)  # read when the session is created
    x = np.random.default_rng(7).standard_normal((2, 40, 15, 15)).astype(np.float32)
    want = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        so = onyx.SessionOptions()
        so.intra_op_num_threads = threads
        got = onyx.InferenceSession(model_path, so).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
