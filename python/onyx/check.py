"""``onyx.check``: each step of the optimised plan against the reference kernels (docs/check.md).

    report = onyx.check("model.onnx")            # random inputs; or inputs={"x": array}
    print(report["table"])
    assert report["flagged"] == 0
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from onyx import _onyx

_GENERATED_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def _generated_inputs(
    model: str | bytes | os.PathLike[str], given: dict[str, Any]
) -> dict[str, Any]:
    """Inputs for the required inputs not in ``given``, as ``onyx check`` makes them: floats
    uniform in [0, 1) (seeded), integers and bools 1 where the name contains "mask" and 0
    elsewhere (a valid index for any table); symbolic dims are 1."""
    from onyx.options import GraphOptimizationLevel, SessionOptions  # noqa: PLC0415
    from onyx.session import InferenceSession  # noqa: PLC0415

    # Only the declared inputs are needed: the cheapest session (no passes, no fast kernels).
    opts = SessionOptions()
    opts.graph_optimization_level = GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.reference_kernels = True
    opts.intra_op_num_threads = 1
    sess = InferenceSession(model if isinstance(model, bytes) else os.fspath(model), opts)
    rng = np.random.default_rng(42)
    out: dict[str, Any] = {}
    for arg in sess.get_inputs():
        if arg.name in given:
            continue
        dtype = _GENERATED_DTYPES.get(arg.type)
        if dtype is None:
            raise _onyx.InvalidArgument(
                f"cannot generate input '{arg.name}' of type {arg.type}; pass it in inputs"
            )
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        if np.issubdtype(dtype, np.floating):
            out[arg.name] = rng.random(shape).astype(dtype)
        else:
            fill = 1 if "mask" in arg.name.lower() else 0
            out[arg.name] = np.full(shape, fill, dtype=dtype)
    return out


def check(
    model: str | bytes | os.PathLike[str],
    inputs: dict[str, Any] | None = None,
    *,
    threads: int = 0,
    optimization: str = "all",
    conv_algorithm: str = "auto",
    json_path: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Runs the model on its optimised plan, then each step's model nodes on the reference
    kernels with the step's inputs as the optimised run made them, and returns the report as a
    dict: ``model``, ``steps``, ``compared``, ``flagged`` (steps above their bound), ``seconds``,
    ``unit_roundoff``, ``checks`` (one dict per step: ``step``, ``name``, ``op``, ``impl``,
    ``nodes``, ``values``, ``compared``, ``flagged``, ``bound_kind``, ``bound``, ``elements``,
    ``max_abs``, ``max_rel``, ``max_ulp``, ``ratio``, ``note``) and ``table`` (the report as
    ``onyx check`` prints it). Inputs not given are generated. ``json_path``: also write the
    report there as JSON (without the table)."""
    feeds = dict(inputs or {})
    feeds.update(_generated_inputs(model, feeds))
    source = model if isinstance(model, bytes) else os.fspath(model)
    text_json, table = _onyx.check(source, feeds, threads, optimization, conv_algorithm)
    if json_path is not None:
        with open(json_path, "w", encoding="utf-8") as f:
            f.write(text_json)
    report: dict[str, Any] = json.loads(text_json)
    report["table"] = table
    return report
