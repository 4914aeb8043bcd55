"""MobileNetV2 (224x224, width 1.0, 3.5M parameters) with random weights, as a training-mode
exporter writes it: bias-free convolutions each followed by its own BatchNormalization node
(not folded), ReLU6 as Clip(0, 6), depthwise 3x3 convolutions (group = channels), residual Adds,
GlobalAveragePool, Flatten and a Gemm classifier. Opset 13.

build(rng) is the fixed 1x3x224x224 model of make_bench_models.py. build(rng, dynamic=True) is the
same graph with a symbolic image size, input [1, 3, "height", "width"], for the dynamic-shape
benchmarks (bench/shape_sweep.py); it is written, with the weights make_bench_models.py uses, by

    .venv/bin/python bench/models/mobilenet_v2.py --dynamic [--out DIR]   # DIR/mobilenet_v2_dynamic.onnx
"""
import argparse
import math
import os
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper

# (expansion t, output channels c, repeats n, first stride s) from the MobileNetV2 paper, Table 2.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]


class _Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits = [], []
        self.count = 0

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def conv_bn(self, x, cin, cout, k, stride, group, relu6, name):
        fan_in = (cin // group) * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k), dtype=np.float32)
        w *= np.float32(math.sqrt(2.0 / fan_in))
        self.init(f"{name}.weight", w)
        self.nodes.append(helper.make_node(
            "Conv", [x, f"{name}.weight"], [f"{name}.conv"], name=f"{name}/Conv",
            kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4, group=group))
        # Linear (projection) outputs get a smaller scale so residual sums stay near unit size.
        gamma = self.rng.uniform(0.5, 1.0, cout) * (1.0 if relu6 else 0.5)
        self.init(f"{name}.bn.weight", gamma.astype(np.float32))
        self.init(f"{name}.bn.bias", (self.rng.standard_normal(cout) * 0.1).astype(np.float32))
        self.init(f"{name}.bn.running_mean", (self.rng.standard_normal(cout) * 0.1).astype(np.float32))
        self.init(f"{name}.bn.running_var", self.rng.uniform(0.5, 1.5, cout).astype(np.float32))
        out = f"{name}.bn"
        self.nodes.append(helper.make_node(
            "BatchNormalization",
            [f"{name}.conv", f"{name}.bn.weight", f"{name}.bn.bias", f"{name}.bn.running_mean",
             f"{name}.bn.running_var"], [out], name=f"{name}/BatchNormalization", epsilon=1e-5))
        if relu6:
            self.nodes.append(helper.make_node("Clip", [out, "relu6.min", "relu6.max"],
                                               [f"{name}.relu6"], name=f"{name}/Clip"))
            out = f"{name}.relu6"
        return out


def build(rng, dynamic=False):
    b = _Builder(rng)
    b.init("relu6.min", np.array(0.0, np.float32))
    b.init("relu6.max", np.array(6.0, np.float32))
    x = b.conv_bn("input", 3, 32, 3, 2, 1, True, "features.0")
    cin, idx = 32, 1
    for t, c, n, s in BLOCKS:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            name = f"features.{idx}"
            y = x
            if t != 1:
                y = b.conv_bn(y, cin, hidden, 1, 1, 1, True, f"{name}.expand")
            y = b.conv_bn(y, hidden, hidden, 3, stride, hidden, True, f"{name}.dw")
            y = b.conv_bn(y, hidden, c, 1, 1, 1, False, f"{name}.project")
            if stride == 1 and cin == c:
                b.nodes.append(helper.make_node("Add", [x, y], [f"{name}.add"], name=f"{name}/Add"))
                y = f"{name}.add"
            x, cin, idx = y, c, idx + 1
    x = b.conv_bn(x, cin, 1280, 1, 1, 1, True, f"features.{idx}")
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"], name="GlobalAveragePool"))
    b.nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="Flatten", axis=1))
    w = rng.standard_normal((1000, 1280), dtype=np.float32) * np.float32(math.sqrt(1.0 / 1280))
    b.init("classifier.weight", w)
    b.init("classifier.bias", (rng.standard_normal(1000) * 0.01).astype(np.float32))
    b.nodes.append(helper.make_node("Gemm", ["flat", "classifier.weight", "classifier.bias"],
                                    ["logits"], name="classifier/Gemm", transB=1))
    graph = helper.make_graph(
        b.nodes, "mobilenet_v2",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       [1, 3, "height", "width"] if dynamic else [1, 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], b.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7,
                             producer_name="onyx-bench")


DYNAMIC_NAME = "mobilenet_v2_dynamic"


def write_dynamic(out_dir):
    """Writes out_dir/mobilenet_v2_dynamic.onnx (seeded like make_bench_models.py's
    mobilenet_v2, so the weights are the same) and returns its path."""
    import onnx

    model = build(np.random.default_rng(zlib.crc32(b"mobilenet_v2")), dynamic=True)
    onnx.checker.check_model(model)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, DYNAMIC_NAME + ".onnx")
    onnx.save(model, path)
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Writes the MobileNetV2 with symbolic height and width.")
    ap.add_argument("--dynamic", action="store_true", required=True,
                    help="the variant with input [1, 3, height, width] (the only one written here)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    print(write_dynamic(ap.parse_args().out))
