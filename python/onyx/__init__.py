"""onyx: a CPU inference engine for ONNX models, with onnxruntime's Python API.

    import onyx
    sess = onyx.InferenceSession("model.onnx")
    print(sess.get_inputs())          # [NodeArg(name='data', type='tensor(float)', shape=[1, 3, 224, 224])]
    (probs,) = sess.run(None, {"data": x})

Code written for onnxruntime ports by changing the import. Also here:

- ``onyx.backend``: an ``onnx.backend.base.Backend`` (needs the onnx package), so
  ``onnx.backend.test.BackendTest(onyx.backend, __name__)`` runs the ONNX test suite;
- ``python -m onyx`` (or the ``onyx`` command): the command-line tool (run, plan, info, bench, ...);
- errors: every engine error is an :class:`onyx.Error`; :class:`InvalidArgument` and
  :class:`InvalidModel` are also ValueErrors, :class:`Unsupported` a NotImplementedError,
  :class:`ExecutionError` a RuntimeError, :class:`NotFound` a FileNotFoundError,
  :class:`Cancelled` (a run stopped through RunOptions) a RuntimeError, :class:`LimitExceeded`
  (a size ceiling) a MemoryError.

Element types map to numpy as onnx.numpy_helper maps them: numpy's own dtypes where numpy has
one, object arrays of str for strings, and ml_dtypes' types for bfloat16, float8*, float4e2m1,
int4/uint4 and int2/uint2 (see python/README.md).
"""
from __future__ import annotations

import importlib
from typing import Any

from onyx._openmp import spin_budget

with spin_budget():  # before libgomp loads with the extension module
    from onyx._onyx import (  # noqa: F401
        Cancelled,
        Error,
        ExecutionError,
        FileError,
        InvalidArgument,
        InvalidModel,
        LimitExceeded,
        NotFound,
        Unsupported,
    )
from onyx.options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from onyx.session import InferenceSession, NodeArg, get_available_providers, get_device

__version__ = "0.1.0"

__all__ = [
    "Cancelled",
    "Error",
    "ExecutionError",
    "ExecutionMode",
    "FileError",
    "GraphOptimizationLevel",
    "InferenceSession",
    "InvalidArgument",
    "InvalidModel",
    "LimitExceeded",
    "NodeArg",
    "NotFound",
    "RunOptions",
    "SessionOptions",
    "Unsupported",
    "get_available_providers",
    "get_device",
]


def __getattr__(name: str) -> Any:
    # `onyx.backend` imports onnx, which InferenceSession does not need: load it on first use.
    if name == "backend":
        return importlib.import_module("onyx.backend")
    raise AttributeError(f"module 'onyx' has no attribute {name!r}")
