"""Deterministic mode from Python (docs/determinism.md): SessionOptions.deterministic and
onnxruntime's use_deterministic_compute turn it on; outputs are bitwise identical at 1-4 threads
and on every run, and agree with onnxruntime; an unseeded random operator is refused."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx


def conv_reduce_product_model() -> bytes:
    """Conv 3x3 + Relu, a whole-tensor ReduceMean, and a MatMul with a symbolic row count."""
    rng = np.random.default_rng(11)
    w = numpy_helper.from_array((0.2 * rng.standard_normal((16, 8, 3, 3))).astype(np.float32), "w")
    m = numpy_helper.from_array((0.2 * rng.standard_normal((256, 64))).astype(np.float32), "m")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
        helper.make_node("ReduceMean", ["y"], ["r"], keepdims=0),
        helper.make_node("MatMul", ["a", "m"], ["p"]),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 28, 28]),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, ["rows", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 28, 28]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, ["rows", 64])],
        [w, m])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def feeds(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((1, 8, 28, 28)).astype(np.float32),
            "a": rng.standard_normal((12, 256)).astype(np.float32)}


def session(model: bytes, threads: int, **options) -> onyx.InferenceSession:
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    so.adapt_threads = False
    for key, value in options.items():
        setattr(so, key, value)
    return onyx.InferenceSession(model, so)


def test_bitwise_identical_at_one_to_four_threads_and_every_run():
    model = conv_reduce_product_model()
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for seed in (0, 1):
        first = None
        for threads in (1, 2, 3, 4):
            s = session(model, threads, deterministic=True)
            assert s.deterministic_mode
            for _ in range(3):
                outs = s.run(None, feeds(seed))
                if first is None:
                    first = outs
                for want, got in zip(first, outs):
                    assert want.tobytes() == got.tobytes(), f"{threads} threads, seed {seed}"
        for want, got in zip(ref.run(None, feeds(seed)), first):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_use_deterministic_compute_turns_it_on():
    model = conv_reduce_product_model()
    assert session(model, 2, use_deterministic_compute=True).deterministic_mode
    assert not session(model, 2).deterministic_mode
    assert "deterministic=True" in repr(_options(deterministic=True))


def _options(**options) -> onyx.SessionOptions:
    so = onyx.SessionOptions()
    for key, value in options.items():
        setattr(so, key, value)
    return so


def random_model(seed=None) -> bytes:
    attrs = {"shape": [2, 3]}
    if seed is not None:
        attrs["seed"] = float(seed)
    node = helper.make_node("RandomUniform", [], ["y"], name="noise", **attrs)
    graph = helper.make_graph([node], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_random_operator_without_seed_is_refused_naming_the_node():
    with pytest.raises(onyx.InvalidArgument, match=r"RandomUniform node 'noise'.*without a 'seed'"):
        session(random_model(), 1, deterministic=True)
    s = session(random_model(seed=3), 1, deterministic=True)
    assert s.run(None, {})[0].tobytes() == s.run(None, {})[0].tobytes()
    session(random_model(), 1)  # accepted outside the mode


def test_cli_deterministic_flag(onyx_cli, tmp_path):
    """--deterministic on run, plan and bench: the refusal names the node; a seeded model runs."""
    import subprocess  # noqa: PLC0415

    unseeded = tmp_path / "unseeded.onnx"
    unseeded.write_bytes(random_model())
    seeded = tmp_path / "seeded.onnx"
    seeded.write_bytes(random_model(seed=2))
    for cmd in ("run", "plan", "bench"):
        p = subprocess.run([onyx_cli, cmd, str(unseeded), "--deterministic"], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode > 0 and "RandomUniform node 'noise'" in p.stderr, (cmd, p.stderr)
        p = subprocess.run([onyx_cli, cmd, str(seeded), "--deterministic"], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, (cmd, p.stderr)


_CAPPED_RUN = r"""
import hashlib, sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onyx

rng = np.random.default_rng(5)
w = numpy_helper.from_array(rng.standard_normal((2048, 1000)).astype(np.float32), "w")
m = numpy_helper.from_array(rng.standard_normal((768, 768)).astype(np.float32), "m")
c = numpy_helper.from_array(rng.standard_normal((112, 6, 1, 1)).astype(np.float32), "c")
graph = helper.make_graph(
    [helper.make_node("Gemm", ["x", "w"], ["g"]), helper.make_node("MatMul", ["a", "m"], ["p"]),
     helper.make_node("Conv", ["i", "c"], ["v"], group=4)],
    "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2048]),
     helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 768]),
     helper.make_tensor_value_info("i", TensorProto.FLOAT, [1, 24, 56, 56])],
    [helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 1000]),
     helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 768]),
     helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 112, 56, 56])],
    [w, m, c])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
feeds = {"x": rng.standard_normal((1, 2048)).astype(np.float32),
         "a": rng.standard_normal((1, 768)).astype(np.float32),
         "i": rng.standard_normal((1, 24, 56, 56)).astype(np.float32)}
for threads in (1, 2, 3, 4):
    so = onyx.SessionOptions()
    so.deterministic = True
    so.intra_op_num_threads = threads
    outs = onyx.InferenceSession(model, so).run(None, feeds)
    print(hashlib.sha1(b"".join(o.tobytes() for o in outs)).hexdigest())
"""


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_gemm_driver_bitwise_identical_under_each_isa_cap(isa):
    """Under ONYX_ISA=avx2 oneDNN's f32 matmul and grouped 1x1 convolutions run on its gemm
    driver, which split sums over K by the thread count (ResNet-50's classifier, BERT's pooler
    and a ShuffleNet group convolution differed between thread counts): deterministic mode runs
    that driver on one thread."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, ONYX_ISA=isa)
    r = subprocess.run([sys.executable, "-c", _CAPPED_RUN], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0 and "this CPU supports up to" in r.stderr:
        pytest.skip(f"this CPU has no {isa}")
    assert r.returncode == 0, r.stderr
    hashes = r.stdout.split()
    assert len(hashes) == 4 and len(set(hashes)) == 1, hashes
