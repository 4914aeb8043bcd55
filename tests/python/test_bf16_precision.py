"""SessionOptions.precision = "bf16": convolutions and matrix products with constant weights take
bfloat16 operands (float32 accumulation and outputs) where the CPU has AVX512-BF16 or AMX.
Against ONNX Runtime's float32 outputs: within bfloat16's precision, and not the float32 bits (so
the bfloat16 path ran). Where the CPU has neither, creating the session fails and says so. The
default stays float32: bit-equal to an explicit "fp32" session."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(3)


def conv_mlp_model():
    """x [1, 8, 12, 12] -> Conv 3x3 (16) + Relu -> Conv 1x1 (16, residual) -> GlobalAveragePool
    -> Flatten -> MatMul 16x32 + bias -> Relu -> Gemm 32x10."""
    def w(*shape, s=0.3):
        return (RNG.standard_normal(shape) * s).astype(np.float32)

    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", w(16, 8, 3, 3)), ("b1", w(16)), ("w2", w(16, 16, 1, 1)), ("b2", w(16)),
        ("m1", w(16, 32)), ("c1", w(32)), ("m2", w(32, 10)), ("c2", w(10))]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "w2", "b2"], ["b"]),
             helper.make_node("Add", ["b", "ar"], ["br"]),
             helper.make_node("GlobalAveragePool", ["br"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "m1"], ["h"]),
             helper.make_node("Add", ["h", "c1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["hr"]),
             helper.make_node("Gemm", ["hr", "m2", "c2"], ["y"])]
    g = helper.make_graph(nodes, "conv_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def session(path, precision, threads=1):
    import onyx

    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    so.precision = precision
    return onyx.InferenceSession(path, so)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bf16") / "conv_mlp.onnx")
    onnx.save(conv_mlp_model(), path)
    return path


@pytest.mark.parametrize("threads", [1, 2])
def test_bf16_is_close_to_float32_and_not_float32(model_path, threads):
    x = RNG.standard_normal((1, 8, 12, 12)).astype(np.float32)
    want = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    try:
        sess = session(model_path, "bf16", threads)
    except Exception as e:  # noqa: BLE001 (a CPU without bfloat16: the error must say so)
        assert "AVX512-BF16 or AMX" in str(e), e
        pytest.skip("this CPU computes no bfloat16")
    got = sess.run(None, {"x": x})[0]
    fp32 = session(model_path, "fp32", threads).run(None, {"x": x})[0]
    scale = np.abs(want).max()
    # bfloat16 keeps 8 bits of mantissa: each operand within 2^-9 relative.
    assert np.abs(got - want).max() <= 3e-2 * scale
    assert np.abs(fp32 - want).max() <= 1e-5 * scale
    assert not np.array_equal(got, fp32), "the bf16 session computed the float32 result"


def test_default_precision_is_float32_bit_for_bit(model_path):
    import onyx

    x = RNG.standard_normal((1, 8, 12, 12)).astype(np.float32)
    default = onyx.InferenceSession(model_path).run(None, {"x": x})[0]
    explicit = session(model_path, "fp32", 0).run(None, {"x": x})[0]
    np.testing.assert_array_equal(default, explicit)
    # And float32 indeed: within float32 rounding of ORT's result (bfloat16 is ~1e-2 away).
    want = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(default - want).max() <= 1e-5 * np.abs(want).max()


def test_unknown_precision_is_refused(model_path):
    with pytest.raises(Exception, match="precision must be 'fp32' or 'bf16'"):
        session(model_path, "fp16")


@pytest.mark.parametrize("command", ["bench", "run"])
def test_cli_prints_the_difference_from_float32(command, model_path, onyx_cli):
    import re
    import subprocess

    args = [onyx_cli, command, model_path, "--precision", "bf16", "--threads", "1"]
    args += ["--runs", "1", "--warmup", "0"] if command == "bench" else ["--generate", "random"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        assert "AVX512-BF16 or AMX" in p.stderr, p.stderr
        pytest.skip("this CPU computes no bfloat16")
    m = re.search(r"bf16 vs fp32: output 'y': max difference ([0-9.e+-]+)", p.stdout)
    assert m, p.stdout
    assert 0 < float(m.group(1)) <= 3e-2
    bad = subprocess.run([onyx_cli, command, model_path, "--precision", "int4"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and "--precision must be fp32 or bf16" in bad.stderr
