"""The onnx package's light models with real-sized random weights.

Each `light_*.onnx` keeps the architecture of a model-zoo network but replaces most weights by
`ConstantOfShape(shape) = 0.02` nodes, which makes every activation nearly constant. Here each
such node becomes a random initializer of the same shape, scaled by what reads it (He-normal for
conv weights, positive BatchNorm variances, ...) so activations stay finite and outputs vary with
the input. The weights the light models do ship (some BatchNorm statistics and biases) are kept.

The IR is raised from 3 to 7 and initializers are dropped from the graph inputs: in IR 3 they
are overridable inputs, which stops both engines from treating them as constants (no folding,
no weight prepacking) and would benchmark something no current exporter writes.
"""
import math
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

# ONYX_LIGHT_MODELS_DIR: another folder of light_*.onnx files (an onnx release that does not ship
# them; bench/scaling.sh bundles them).
LIGHT_DIR = os.environ.get("ONYX_LIGHT_MODELS_DIR") or os.path.join(
    os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _consumers(graph):
    """value name → [(node, input index)]"""
    uses = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            uses.setdefault(name, []).append((node, k))
    return uses


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _role(name, uses):
    """(op type, input index, node) of the first real reader; follows Unsqueeze/Reshape."""
    seen = set()
    while name not in seen:
        seen.add(name)
        readers = uses.get(name, [])
        if not readers:
            return None, -1, None
        node, k = readers[0]
        if node.op_type in ("Unsqueeze", "Reshape") and k == 0:
            name = node.output[0]
            continue
        return node.op_type, k, node
    return None, -1, None


def _feeds_residual_sum(node, uses):
    return any(r.op_type in ("Sum", "Add") for r, _ in uses.get(node.output[0], []))


def _random_weight(shape, op, k, node, uses, rng):
    n = int(np.prod(shape)) if shape else 1
    if op == "Conv" and k == 1:
        fan_in = int(np.prod(shape[1:]))
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in))
    if op == "Gemm" and k == 1:
        fan_in = shape[0] if (len(shape) == 2 and not _attr(node, "transB", 0)) else n // shape[0]
        # The classifier's logits stay within a few units so the softmax does not saturate.
        gain = 0.2 if any(r.op_type == "Softmax" for r, _ in uses.get(node.output[0], [])) else 1.0
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(gain / math.sqrt(fan_in))
    if op == "BatchNormalization":
        if k == 1:  # scale; small at the end of a residual branch, as in trained ResNets, so
            # the residual sums do not grow the activations (and saturate the softmax).
            hi = 0.3 if _feeds_residual_sum(node, uses) else 1.0
            return rng.uniform(hi / 2, hi, shape).astype(np.float32)
        if k == 4:  # variance: positive
            return rng.uniform(0.5, 1.5, shape).astype(np.float32)
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1))  # bias, mean
    if op == "Mul":  # densenet's per-channel scale after BatchNorm
        return rng.uniform(0.5, 1.0, shape).astype(np.float32)
    return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.01)  # biases


def build(name, rng):
    """Returns the ModelProto of light_<name>.onnx with random weights."""
    model = onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses = _consumers(g)
    kept_nodes, new_inits, dropped = [], [], set()
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            kept_nodes.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(inits[node.input[0]])]
        op, k, reader = _role(node.output[0], uses)
        w = _random_weight(shape, op, k, reader, uses, rng)
        new_inits.append(numpy_helper.from_array(w, node.output[0]))
        if len(uses.get(node.input[0], [])) == 1:
            dropped.add(node.input[0])
    del g.node[:]
    g.node.extend(kept_nodes)
    # Unused initializers (one in light_resnet50) would only draw warnings.
    read = {name for n in kept_nodes for name in n.input}
    kept_inits = [t for t in g.initializer if t.name not in dropped and t.name in read]
    del g.initializer[:]
    g.initializer.extend(kept_inits + new_inits)
    init_names = set(inits) | {t.name for t in new_inits}
    real_inputs = [vi for vi in g.input if vi.name not in init_names]
    del g.input[:]
    g.input.extend(real_inputs)
    model.ir_version = 7
    return model

