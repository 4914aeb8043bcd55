#!/usr/bin/env python3
"""Where the block-sparse 1x1 convolution beats the dense one: the measurement behind
kMinZeroBlocks (kernels/common/sparse_kernels.h, docs/sparsity.md).

    .venv/bin/python bench/sparse_layers.py [--onyx build/onyx] [--threads 1] [--runs 20]
        [--zero 0.1,0.2,0.3,0.4,0.5,0.7] [--rounds 2] [--block 16]

For each 1x1 layer shape of ResNet-50 and MobileNetV2 and each fraction of zero blocks (--block
output channels at one input channel, 16 or 32: the width the kernel then takes), a one-convolution model (bias and Relu) is timed with
`onyx bench --profile`, sparse kernels on and off (ONYX_SPARSE_KERNELS) in alternating rounds;
ONYX_SPARSE_MIN_ZERO_BLOCKS=0 lets the sparse kernel take every fraction and ONYX_SPARSE_BLOCK
makes it take blocks of --block. The median time of
the convolution's step alone is compared (the layout transposes around it are
the same either way). Prints dense / sparse per shape and fraction: above 1 the sparse kernel wins.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (H = W, C in, M out) of the 1x1 convolutions, stride 1.
SHAPES = {
    "resnet50": [(56, 64, 256), (56, 256, 64), (28, 512, 128), (28, 128, 512), (14, 1024, 256),
                 (14, 256, 1024), (7, 2048, 512), (7, 512, 2048)],
    "mobilenet_v2": [(56, 24, 144), (56, 144, 24), (28, 192, 32), (14, 384, 64), (14, 64, 384),
                     (7, 960, 160), (7, 320, 1280)],
}


def conv_model(hw: int, c: int, m: int, zero: float, seed: int, block: int = 16) -> bytes:
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1, 1, (m, c, 1, 1)).astype(np.float32)
    blocks = (m + block - 1) // block
    mask = rng.uniform(0, 1, (blocks, c)) < zero
    for b in range(blocks):
        w[b * block:(b + 1) * block, mask[b], 0, 0] = 0
    bias = rng.uniform(-1, 1, m).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, hw, hw])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def conv_step_ms(onyx: str, path: str, threads: int, runs: int, sparse: bool,
                 block: int = 16) -> float:
    """Median time of the convolution's step over `runs` runs (sparse: in blocks of `block`)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        env = dict(os.environ, ONYX_SPARSE_KERNELS="1" if sparse else "0",
                   ONYX_SPARSE_MIN_ZERO_BLOCKS="0", ONYX_SPARSE_BLOCK=str(block))
        subprocess.run([onyx, "bench", path, "--threads", str(threads), "--runs", str(runs),
                        "--profile", trace.name], env=env, check=True, capture_output=True)
        with open(trace.name) as f:
            data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    durs = [e["dur"] for e in events if e.get("ph") == "X" and e.get("name") == "conv"]
    return statistics.median(durs) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--onyx", default="build/onyx")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--zero", default="0.1,0.2,0.3,0.4,0.5,0.7")
    ap.add_argument("--block", type=int, default=16, help="pruned block width (16 or 32)")
    args = ap.parse_args()
    fractions = [float(z) for z in args.zero.split(",")]
    print(f"load average {os.getloadavg()}")
    print("| model | H=W, C -> M | " + " | ".join(f"{z:.0%} zero" for z in fractions) + " |")
    print("|---|---|" + "---|" * len(fractions))
    with tempfile.TemporaryDirectory() as tmp:
        for model, shapes in SHAPES.items():
            for hw, c, m in shapes:
                cells = []
                for z in fractions:
                    path = os.path.join(tmp, "layer.onnx")
                    with open(path, "wb") as f:
                        f.write(conv_model(hw, c, m, z, seed=hw * c + m, block=args.block))
                    dense, sparse = [], []
                    for _ in range(args.rounds):  # alternating
                        dense.append(conv_step_ms(args.onyx, path, args.threads, args.runs, False))
                        sparse.append(conv_step_ms(args.onyx, path, args.threads, args.runs, True,
                                                   args.block))
                    cells.append(f"{statistics.median(dense) / statistics.median(sparse):.2f}")
                print(f"| {model} | {hw}, {c} -> {m} | " + " | ".join(cells) + " |", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
