"""Every light model: onyx (through `onyx run` on .pb inputs) against ONNX Runtime on the same
random input, rtol 1e-3 / atol 1e-5."""
import json
import os
import platform
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from conftest import DATA

MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
          "shufflenet", "squeezenet", "vgg19", "zfnet512"]


def free_inputs(model):
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def run_against_onnxruntime(name, onyx_cli, tmp_path, env=None):
    path = os.path.join(DATA, "light", f"light_{name}.onnx")
    model = onnx.load(path)
    rng = np.random.default_rng(2024)
    feeds, files = {}, []
    for k, vi in enumerate(free_inputs(model)):
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
        x = rng.random(shape, dtype=np.float32)
        feeds[vi.name] = x
        f = tmp_path / f"input_{k}.pb"
        f.write_bytes(numpy_helper.from_array(x).SerializeToString())
        files.append(str(f))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    expected = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    out_dir = tmp_path / "out"
    subprocess.run([onyx_cli, "run", path, *files, "--output-dir", str(out_dir), "--threads", "2"],
                   check=True, capture_output=True, env=env)
    for vi, e in zip(model.graph.output, expected):
        t = onnx.TensorProto()
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in vi.name)
        t.ParseFromString((out_dir / f"{safe}.pb").read_bytes())
        np.testing.assert_allclose(numpy_helper.to_array(t), e, rtol=1e-3, atol=1e-5)
    return path


@pytest.mark.parametrize("name", MODELS)
def test_matches_onnxruntime(name, onyx_cli, tmp_path):
    run_against_onnxruntime(name, onyx_cli, tmp_path)


# oneDNN picks its instruction set when the process starts: ONEDNN_MAX_CPU_ISA=AVX2 runs the code
# an AVX2-only machine gets. The convolutions must stay on oneDNN or onyx's own F(2x2, 3x3)
# Winograd kernel (Highway, any ISA), not fall to the reference kernels, and oneDNN's Winograd,
# which needs AVX-512, must give way to direct convolution.
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="oneDNN runs on x86-64")
@pytest.mark.parametrize("name", ["inception_v1", "resnet50", "shufflenet", "squeezenet"])
def test_avx2_code_matches_onnxruntime(name, onyx_cli, tmp_path):
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    path = run_against_onnxruntime(name, onyx_cli, tmp_path, env)
    plan = subprocess.run([onyx_cli, "plan", path, "--json"], check=True, capture_output=True,
                          text=True, env=env).stdout
    convs = {s["node"]: s["impl"] for s in json.loads(plan)["schedule"] if "Conv" in s["impl"]}
    assert convs and all(i in ("NhwcConv_f32_onednn", "NhwcConv_f32_hwy/winograd")
                         for i in convs.values()), convs
