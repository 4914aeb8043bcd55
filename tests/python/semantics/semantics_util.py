"""Helpers for the docs/semantics tests: one-node models, sessions on a chosen kernel, the kernel
the plan gives a node (the onyx CLI), float64 oracles and the error measures the bounds use."""
import json
import os
import platform
import subprocess
import tempfile
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from isa_caps import has_avx512

U = 2.0 ** -24  # unit roundoff of float32 (round to nearest)
FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE


def rules(*ids: str) -> Callable:
    """Marks a test as the check of the docs/semantics rules `ids` (test_rule_coverage.py reads
    these decorators from the source)."""
    def mark(fn: Callable) -> Callable:
        fn.rule_ids = ids
        return fn
    return mark


def one_node(op: str, inputs: Sequence[Tuple[str, Optional[List[Any]]]], attrs: Dict[str, Any],
             inits: Sequence[Tuple[str, np.ndarray]] = (), opset: int = 17, elem: int = FLOAT,
             outputs: Sequence[str] = ("y",)) -> onnx.ModelProto:
    """A model of the single node `op` named n0: graph inputs (name, shape) of type `elem`, then
    initializers, in that order, as the node's inputs ("" for an absent optional input)."""
    names = [n for n, _ in inputs] + [n for n, _ in inits]
    node = helper.make_node(op, names, list(outputs), name="n0", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, elem, s) for n, s in inputs],
        [helper.make_tensor_value_info(o, elem if i == 0 else TensorProto.UNDEFINED, None)
         for i, o in enumerate(outputs)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in inits if n])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def session(model: onnx.ModelProto, reference: bool = False, conv_algorithm: str = "auto"
            ) -> "onyx.InferenceSession":
    opts = onyx.SessionOptions()
    opts.reference_kernels = reference
    opts.conv_algorithm = conv_algorithm
    return onyx.InferenceSession(model.SerializeToString(), opts)


def run(model: onnx.ModelProto, feeds: Dict[str, np.ndarray], reference: bool = False,
        conv_algorithm: str = "auto") -> List[np.ndarray]:
    return session(model, reference, conv_algorithm).run(None, feeds)


def error_of(model: onnx.ModelProto, feeds: Dict[str, np.ndarray], reference: bool = False) -> str:
    """The message of the error creating or running the session raises (the test fails when none
    does)."""
    with pytest.raises(Exception) as info:
        run(model, feeds, reference)
    return str(info.value)


def kernel_of(cli: str, model: onnx.ModelProto, reference: bool = False,
              conv_algorithm: str = "auto", node: str = "n0") -> str:
    """The kernel `onyx plan` gives node `node` (the node or the NhwcConv it became)."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(model, path)
        args = [cli, "plan", path, "--json", "--conv-algorithm", conv_algorithm]
        if reference:
            args += ["--kernels", "reference"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    impls = {s["node"]: s["impl"] for s in json.loads(p.stdout)["schedule"]}
    return impls[node]


def ratio(got: np.ndarray, exact: np.ndarray, scale: np.ndarray) -> float:
    """max |got - exact| / scale over the elements (0 where both are 0): the constant c a bound
    |got - exact| <= c * scale needs."""
    err = np.abs(got.astype(np.float64) - exact)
    scale = np.asarray(scale, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(err == 0, 0.0, err / scale)
    return float(np.max(r)) if r.size else 0.0


def cancelling(rng: np.random.Generator, shape: Sequence[int], spread: float = 1e4) -> np.ndarray:
    """float32 values of mixed sign over many binades: sums of their products cancel heavily (the
    exact result is far below the sum of magnitudes), the cases relative bounds miss."""
    mag = np.exp(rng.uniform(-np.log(spread), np.log(spread), size=shape))
    return (rng.choice([-1.0, 1.0], size=shape) * mag).astype(np.float32)


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and the same bytes (NaN payloads and the sign of zero included)."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def expect_kernel(cli: str, model: onnx.ModelProto, expected: str, reference: bool = False,
                  conv_algorithm: str = "auto", needs_avx512: bool = False) -> None:
    """Asserts the plan runs node n0 on `expected` where that kernel exists (x86-64 with oneDNN,
    AVX-512 for the Winograd kernels); skips elsewhere, where the bound is checked on another
    kernel by its own test."""
    if not reference and (platform.machine() not in ("x86_64", "AMD64") or
                          (needs_avx512 and not has_avx512())):
        pytest.skip(f"{expected} runs on x86-64" + (" with AVX-512" if needs_avx512 else ""))
    got = kernel_of(cli, model, reference, conv_algorithm)
    assert got == expected, f"the plan gives n0 {got}, not {expected}: choose another shape"
