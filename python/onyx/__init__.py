"""onyx: a CPU inference engine for ONNX models, with onnxruntime's Python API.

    import onyx
    sess = onyx.InferenceSession("model.onnx")
    print(sess.get_inputs())          # [NodeArg(name='data', type='tensor(float)', shape=[1, 3, 224, 224])]
    (probs,) = sess.run(None, {"data": x})

Code written for onnxruntime ports by changing the import. Also here:

- ``onyx.backend``: an ``onnx.backend.base.Backend`` (needs the onnx package), so
  ``onnx.backend.test.BackendTest(onyx.backend, __name__)`` runs the ONNX test suite;
- ``python -m onyx`` (or the ``onyx`` command): the command-line tool (run, plan, info, bench, ...);
- ``onyx.capi.onnxruntime_pybind11_state``: onnxruntime's exception classes (Fail,
  InvalidArgument, NoSuchFile, ...), which onyx's errors also derive from, for ``except`` clauses
  written for onnxruntime;
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
from onyx._log import (
    set_default_logger_callback,
    set_default_logger_severity,
    set_default_logger_verbosity,
)
from onyx.check import check
from onyx.options import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
)
from onyx.ortvalue import IOBinding, OrtValue
from onyx.session import (
    InferenceSession,
    ModelMetadata,
    NodeArg,
    get_all_providers,
    get_available_providers,
    get_device,
)

__version__ = "0.1.0"


def get_version_string() -> str:
    """onyx's version (onnxruntime's ``get_version_string()`` gives its own)."""
    return __version__


def get_build_info() -> str:
    """A line describing this build, as ``onnxruntime.get_build_info()`` (which starts with
    "Build Info")."""
    import platform  # noqa: PLC0415

    return (
        f"Build Info: onyx {__version__}, CPU ({platform.machine()}), "
        f"Python {platform.python_version()}"
    )


def prune(model: str, output: str, method: str = "relative", sparsity: float = 0.5,
          layers: str = "all", block: int = 1, sparse_initializers: bool = False) -> dict:
    """Prunes the Conv and MatMul/Gemm weights of the model file `model` without retraining and
    writes `output`, as ``onyx prune`` (docs/sparsity.md): method relative | flat | triangular,
    layers all | 1x1 | conv | fc, `block` consecutive output channels pruned together. Returns
    the report: ``layers`` (initializer, node, op_type, shape, threshold, elements, zeros,
    sparsity), the totals ``elements``, ``zeros``, ``sparsity``, ``span_fraction`` (flat and
    triangular) and ``skipped``."""
    from onyx import _onyx  # noqa: PLC0415

    return _onyx.prune(model, output, method, sparsity, layers, block, sparse_initializers)


def enable_telemetry_events() -> None:
    """Accepted for onnxruntime compatibility: onyx sends no telemetry."""


def disable_telemetry_events() -> None:
    """Accepted for onnxruntime compatibility: onyx sends no telemetry."""


__all__ = [
    "Cancelled",
    "Error",
    "ExecutionError",
    "ExecutionMode",
    "ExecutionOrder",
    "FileError",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "InvalidArgument",
    "InvalidModel",
    "LimitExceeded",
    "ModelMetadata",
    "NodeArg",
    "NotFound",
    "OrtValue",
    "RunOptions",
    "SessionOptions",
    "Unsupported",
    "check",
    "disable_telemetry_events",
    "enable_telemetry_events",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_device",
    "get_version_string",
    "prune",
    "set_default_logger_callback",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
]


def __getattr__(name: str) -> Any:
    # `onyx.backend` imports onnx, which InferenceSession does not need: load it on first use.
    if name in ("backend", "capi"):
        return importlib.import_module(f"onyx.{name}")
    raise AttributeError(f"module 'onyx' has no attribute {name!r}")
