"""onnxruntime's ``onnxruntime.capi._pybind_state``: the same names as
:mod:`onyx.capi.onnxruntime_pybind11_state`."""
from onyx.capi.onnxruntime_pybind11_state import *  # noqa: F401,F403
from onyx.capi.onnxruntime_pybind11_state import __all__  # noqa: F401
