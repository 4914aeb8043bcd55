"""onnxruntime's ``onnxruntime.capi`` module path, for code that imports from it.

``onyx.capi.onnxruntime_pybind11_state`` (also importable as ``onyx.capi._pybind_state``) holds
onnxruntime's exception classes and the classes code reaches there (OrtValue, RunOptions, ...).
"""
