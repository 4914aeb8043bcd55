"""A float model quantized to QDQ by onnxruntime.quantization, as its users do it: static, per
channel, uint8 activations and int8 weights, calibrated on a few seeded random inputs. Shared by the
int8 tests (test_quantized_conv_ort.py, test_quantized_matmul_ort.py), with the plan reader they use."""
import json
import subprocess

import numpy as np
import onnx
from isa_caps import LEVELS, cap_level


def quantize_qdq(model, fp32_path, qdq_path, input_shape, seed=0, samples=8):
    """Saves `model` to fp32_path and its QDQ form to qdq_path; returns both paths."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    onnx.save(model, fp32_path)
    rng = np.random.default_rng(seed)
    name = model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{name: rng.normal(0, 1, input_shape).astype(np.float32)}
                               for _ in range(samples)])

        def get_next(self):
            return next(self.feeds, None)

    quantize_static(fp32_path, qdq_path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return fp32_path, qdq_path


def plan_json(cli, path, *args):
    """`onyx plan --json` of a model (extra CLI arguments after the path), parsed."""
    p = subprocess.run([cli, "plan", path, "--json", *args], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def int8_on_onednn(cli):
    """Whether the int8 operators run on oneDNN here: its int8 kernels are registered from
    avx512_vnni up (below, their 16-bit pair sums saturate and the reference kernels run)."""
    return LEVELS.index(cap_level(cli)) >= LEVELS.index("avx512_vnni")


def assert_int8_impls(cli, got, want):
    """`got` (a plan's impls) is `want` where oneDNN's int8 kernels run; elsewhere none of them is
    planned (the values are still checked against ONNX Runtime by the caller)."""
    if int8_on_onednn(cli):
        assert got == want, got
    else:
        assert not any(i.endswith("_8bit_onednn") for i in got), got


def skip_without_int8_onednn(cli):
    import pytest  # noqa: PLC0415

    if not int8_on_onednn(cli):
        pytest.skip("oneDNN's int8 kernels need VNNI or AMX, which this CPU (or ONYX_ISA) lacks")
