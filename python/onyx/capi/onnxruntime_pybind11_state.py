"""onnxruntime's ``onnxruntime.capi.onnxruntime_pybind11_state`` names, over onyx.

The exception classes derive from Exception alone, as onnxruntime's do; onyx's own errors derive
from the matching ones, so ``except InvalidArgument`` written for onnxruntime catches onyx's
error for a bad feed (which is also an ``onyx.InvalidArgument`` and a ValueError):

| onyx error | onnxruntime class |
| --- | --- |
| onyx.InvalidArgument | InvalidArgument |
| onyx.InvalidModel | InvalidGraph and InvalidProtobuf |
| onyx.Unsupported | NotImplemented |
| onyx.NotFound | NoSuchFile |
| onyx.ExecutionError | RuntimeException |
| onyx.FileError, onyx.LimitExceeded, onyx.Cancelled | Fail |

NoModel, EngineError, ModelLoaded and EPFail exist for except clauses; onyx raises none of them.
"""
from __future__ import annotations

from onyx import _onyx
from onyx.options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from onyx.ortvalue import IOBinding as SessionIOBinding
from onyx.ortvalue import OrtValue, OrtValueVector
from onyx.session import (
    ModelMetadata,
    NodeArg,
    get_all_providers,
    get_available_providers,
    get_device,
)

_classes = _onyx.ort_exceptions
Fail = _classes["Fail"]
InvalidArgument = _classes["InvalidArgument"]
NoSuchFile = _classes["NoSuchFile"]
NoModel = _classes["NoModel"]
EngineError = _classes["EngineError"]
RuntimeException = _classes["RuntimeException"]
InvalidProtobuf = _classes["InvalidProtobuf"]
ModelLoaded = _classes["ModelLoaded"]
NotImplemented = _classes["NotImplemented"]  # noqa: A001 (onnxruntime's name)
InvalidGraph = _classes["InvalidGraph"]
EPFail = _classes["EPFail"]
del _classes

__all__ = [
    "EPFail",
    "EngineError",
    "ExecutionMode",
    "Fail",
    "GraphOptimizationLevel",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoaded",
    "ModelMetadata",
    "NoModel",
    "NoSuchFile",
    "NodeArg",
    "NotImplemented",
    "OrtValue",
    "OrtValueVector",
    "RunOptions",
    "RuntimeException",
    "SessionIOBinding",
    "SessionOptions",
    "get_all_providers",
    "get_available_providers",
    "get_device",
]
