"""OrtValue, OrtValueVector and IOBinding: onnxruntime's value and binding API over numpy.

onyx runs on the CPU, so an OrtValue is a numpy array (or a list of arrays for a sequence) that
lives in host memory: ``ortvalue_from_numpy`` shares the array's memory, as onnxruntime does for
CPU values, and ``numpy()`` returns a view of it.
"""
from __future__ import annotations

import ctypes
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["IOBinding", "OrtValue", "OrtValueVector"]

# onnx TensorProto.DataType numbers and names, for element_type() and data_type().
_ONNX_TYPES: list[tuple[int, str, Any]] = [
    (1, "float", np.float32),
    (2, "uint8", np.uint8),
    (3, "int8", np.int8),
    (4, "uint16", np.uint16),
    (5, "int16", np.int16),
    (6, "int32", np.int32),
    (7, "int64", np.int64),
    (8, "string", np.object_),
    (9, "bool", np.bool_),
    (10, "float16", np.float16),
    (11, "double", np.float64),
    (12, "uint32", np.uint32),
    (13, "uint64", np.uint64),
    (14, "complex64", np.complex64),
    (15, "complex128", np.complex128),
]
try:  # the wheel depends on ml_dtypes; keep working without it
    import ml_dtypes

    _ONNX_TYPES += [
        (16, "bfloat16", ml_dtypes.bfloat16),
        (17, "float8e4m3fn", ml_dtypes.float8_e4m3fn),
        (18, "float8e4m3fnuz", ml_dtypes.float8_e4m3fnuz),
        (19, "float8e5m2", ml_dtypes.float8_e5m2),
        (20, "float8e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
        (21, "uint4", ml_dtypes.uint4),
        (22, "int4", ml_dtypes.int4),
    ]
except ImportError:  # pragma: no cover
    pass
_BY_DTYPE = {np.dtype(t): (num, name) for num, name, t in _ONNX_TYPES}
_BY_NUMBER = {num: np.dtype(t) for num, _, t in _ONNX_TYPES}
_BY_NAME = {name: np.dtype(t) for _, name, t in _ONNX_TYPES}


def numpy_dtype_of(onnx_type: str) -> Any:
    """The numpy dtype for an onnxruntime type string such as ``'tensor(float)'``; None if none."""
    if onnx_type.startswith("tensor(") and onnx_type.endswith(")"):
        return _BY_NAME.get(onnx_type[7:-1])
    return None


def _type_of(dtype: np.dtype) -> tuple[int, str]:
    if dtype.kind in "US":
        return 8, "string"
    found = _BY_DTYPE.get(dtype)
    if found is None:
        raise TypeError(f"OrtValue: numpy dtype {dtype} has no ONNX element type")
    return found


def _check_cpu(device_type: str) -> None:
    if str(device_type).lower() != "cpu":
        from onyx import InvalidArgument  # noqa: PLC0415 (avoids an import cycle)

        raise InvalidArgument(
            f"onyx runs on the CPU only; device_type {device_type!r} is not available"
        )


def _aligned_zeros(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Zeros on a 64-byte boundary, like onyx's own buffers, so that a run can write an output
    bound to it in place (IOBinding)."""
    if dtype == np.object_:
        return np.zeros(shape, dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _contiguous(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself when C-contiguous, else a C-contiguous copy (0-d arrays stay 0-d, unlike
    numpy.ascontiguousarray)."""
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _dtype_of(element_type: Any) -> np.dtype:
    """A numpy dtype from a numpy type/dtype or an onnx TensorProto.DataType number."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        if int(element_type) not in _BY_NUMBER:
            from onyx import InvalidArgument  # noqa: PLC0415

            raise InvalidArgument(f"unknown ONNX element type {element_type}")
        return _BY_NUMBER[int(element_type)]
    return np.dtype(element_type)


class OrtValue:
    """A value fed or fetched: a tensor (numpy array) or a sequence of tensors, in CPU memory."""

    __slots__ = ("_value",)

    def __init__(self, value: Any, numpy_obj: Any = None) -> None:
        if isinstance(value, OrtValue):
            value = value._value
        self._value = value

    # -- construction (onnxruntime's static methods) --------------------------------------------
    @staticmethod
    def ortvalue_from_numpy(numpy_obj: np.ndarray, device_type: str = "cpu", device_id: int = 0,
                            vendor_id: int = -1) -> "OrtValue":
        """An OrtValue over ``numpy_obj``'s memory (copied only when not C-contiguous)."""
        _check_cpu(device_type)
        arr = np.asarray(numpy_obj)
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
        return OrtValue(_contiguous(arr))

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data: np.ndarray, onnx_element_type: int) -> "OrtValue":
        """An OrtValue over ``data``'s bytes, read as the ONNX element type given by number."""
        dtype = _dtype_of(int(onnx_element_type))
        arr = _contiguous(np.asarray(data))
        if arr.dtype != dtype:
            if arr.dtype.itemsize != dtype.itemsize:
                from onyx import InvalidArgument  # noqa: PLC0415

                raise InvalidArgument(
                    f"ortvalue_from_numpy_with_onnx_type: {arr.dtype} elements are "
                    f"{arr.dtype.itemsize} bytes, ONNX type {onnx_element_type} needs "
                    f"{dtype.itemsize}"
                )
            arr = arr.view(dtype)
        return OrtValue(arr)

    @staticmethod
    def ortvalue_from_shape_and_type(
        shape: Sequence[int],
        element_type: Any,
        device_type: str = "cpu",
        device_id: int = 0,
        vendor_id: int = -1,
    ) -> "OrtValue":
        """A new zeroed tensor of ``shape`` and ``element_type`` (numpy type or ONNX number)."""
        _check_cpu(device_type)
        return OrtValue(_aligned_zeros(tuple(int(d) for d in shape), _dtype_of(element_type)))

    @staticmethod
    def from_dlpack(data: Any, is_bool_tensor: bool = False) -> "OrtValue":
        """An OrtValue sharing the memory of a CPU DLPack tensor: a DLPack capsule or an object
        with ``__dlpack__`` (a numpy array, a torch CPU tensor, an OrtValue). ``is_bool_tensor``
        is accepted for onnxruntime compatibility; bool tensors keep their type."""
        source = _CapsuleSource(data) if type(data).__name__ == "PyCapsule" else data
        return OrtValue(np.from_dlpack(source))

    def __dlpack__(self, **kwargs: Any) -> Any:
        """The tensor as a DLPack capsule (CPU memory, shared)."""
        return self._tensor().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    def to_dlpack(self) -> Any:
        return self.__dlpack__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """numpy's array protocol: the tensor itself (no copy) unless ``dtype`` differs."""
        arr = self._tensor()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    # -- queries ---------------------------------------------------------------------------------
    def _get_c_value(self) -> "OrtValue":
        """onnxruntime's handle to the native value; onyx has no separate one."""
        return self

    @property
    def _ortvalue(self) -> "OrtValue":
        """onnxruntime's attribute for the native value; onyx has no separate one."""
        return self

    def has_value(self) -> bool:
        return self._value is not None

    def is_tensor(self) -> bool:
        return isinstance(self._value, np.ndarray)

    def is_tensor_sequence(self) -> bool:
        return isinstance(self._value, list)

    def is_sparse_tensor(self) -> bool:
        return False

    def device_name(self) -> str:
        return "cpu"

    def _tensor(self) -> np.ndarray:
        if not isinstance(self._value, np.ndarray):
            from onyx import InvalidArgument  # noqa: PLC0415

            raise InvalidArgument("this OrtValue is not a tensor")
        return self._value

    def shape(self) -> list[int]:
        return list(self._tensor().shape)

    def element_type(self) -> int:
        """The ONNX TensorProto.DataType number of the elements (1 for float)."""
        return _type_of(self._tensor().dtype)[0]

    def data_type(self) -> str:
        """``'tensor(float)'``, ``'seq(tensor(int64))'``, ... as in NodeArg.type."""
        if isinstance(self._value, list):
            inner = OrtValue(self._value[0]).data_type() if self._value else "tensor(float)"
            return f"seq({inner})"
        return f"tensor({_type_of(self._tensor().dtype)[1]})"

    def tensor_size_in_bytes(self) -> int:
        return int(self._tensor().nbytes)

    def data_ptr(self) -> int:
        """The address of the tensor's first element."""
        return int(self._tensor().ctypes.data)

    def numpy(self) -> Any:
        """The tensor as a numpy array sharing this value's memory (a list for a sequence)."""
        if isinstance(self._value, np.ndarray):
            return self._value.view()
        return self._value

    def update_inplace(self, np_arr: np.ndarray) -> None:
        """Copies ``np_arr`` (same shape and type) into this tensor's memory."""
        np.copyto(self._tensor(), np.asarray(np_arr), casting="no")

    def __repr__(self) -> str:
        if isinstance(self._value, np.ndarray):
            return f"OrtValue({self.data_type()}, shape={self.shape()})"
        return f"OrtValue({self._value!r})"


class _CapsuleSource:
    """Hands numpy.from_dlpack a bare DLPack capsule (it takes objects with __dlpack__)."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class OrtValueVector:
    """A list of OrtValues (what ``run_with_ort_values`` returns at the native level)."""

    __slots__ = ("_items",)

    def __init__(self, items: Sequence[OrtValue] = ()) -> None:
        self._items = list(items)

    def push_back(self, value: OrtValue) -> None:
        self._items.append(value)

    def reserve(self, n: int) -> None:
        pass

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> OrtValue:
        return self._items[i]

    def __iter__(self) -> Iterator[OrtValue]:
        return iter(self._items)

    def numpy(self) -> list:
        return [v.numpy() for v in self._items]


def _array_at(ptr: int, dtype: Any, shape: Sequence[int]) -> np.ndarray:
    """A numpy array over caller memory at address ``ptr`` (the caller keeps it alive)."""
    dtype = _dtype_of(dtype)
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if dtype == np.object_:
        from onyx import InvalidArgument  # noqa: PLC0415

        raise InvalidArgument("string tensors cannot be bound by address; use bind_cpu_input")
    if ptr == 0 and count:
        from onyx import InvalidArgument  # noqa: PLC0415

        raise InvalidArgument("buffer_ptr is null")
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr) if count else b""
    return np.frombuffer(buf, dtype=dtype, count=count).reshape(tuple(int(d) for d in shape))


class IOBinding:
    """Inputs and outputs bound ahead of :meth:`InferenceSession.run_with_iobinding`.

    Outputs bound to a buffer (``bind_output(..., buffer_ptr=...)`` or
    ``bind_ortvalue_output``) are written into it: by the kernel that makes the output when the
    buffer has its element type and shape and is 64-byte aligned (as
    ``OrtValue.ortvalue_from_shape_and_type`` allocates), else copied in after the run, once its
    shape and type are checked against the buffer's. Outputs bound by name only are allocated by
    the run; ``get_outputs()`` returns them.
    """

    def __init__(self, session: Any) -> None:
        self._session = session
        self._inputs: dict[str, Any] = {}
        self._outputs: list[tuple[str, np.ndarray | None]] = []
        self._results: list[OrtValue] = []

    def bind_cpu_input(self, name: str, arr_on_cpu: Any) -> None:
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name: str, device_type: str, device_id: int, element_type: Any,
                   shape: Sequence[int], buffer_ptr: int) -> None:
        """Binds caller memory at ``buffer_ptr`` holding ``shape`` elements of ``element_type``."""
        _check_cpu(device_type)
        self._inputs[name] = _array_at(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._inputs[name] = ortvalue._value

    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0,
                    element_type: Any = None, shape: Sequence[int] | None = None,
                    buffer_ptr: int | None = None) -> None:
        """Binds output ``name``: to caller memory when ``buffer_ptr`` is given (with
        ``element_type`` and ``shape``), else to a value the run allocates."""
        _check_cpu(device_type)
        target = None
        if buffer_ptr is not None:
            if element_type is None or shape is None:
                from onyx import InvalidArgument  # noqa: PLC0415

                raise InvalidArgument("bind_output with buffer_ptr needs element_type and shape")
            target = _array_at(buffer_ptr, element_type, shape)
        self._bind(name, target)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        self._bind(name, ortvalue._tensor())

    def _bind(self, name: str, target: np.ndarray | None) -> None:
        self._outputs = [(n, t) for n, t in self._outputs if n != name] + [(name, target)]

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for on the CPU."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for on the CPU."""

    def _run(self, run_options: Any) -> None:
        names = [n for n, _ in self._outputs]
        if not names:
            names = [o.name for o in self._session.get_outputs()]
        buffers = {n: t for n, t in self._outputs if t is not None}
        results = self._session._run(names, self._inputs, run_options, buffers or None)
        self._results = []
        targets = dict(self._outputs)
        for name, result in zip(names, results):
            target = targets.get(name)
            if target is not None and result is not target:  # not written in place: copy
                if target.shape != np.shape(result) or target.dtype != np.asarray(result).dtype:
                    from onyx import InvalidArgument  # noqa: PLC0415

                    raise InvalidArgument(
                        f"output '{name}' is {np.asarray(result).dtype}{list(np.shape(result))}, "
                        f"but the bound buffer is {target.dtype}{list(target.shape)}"
                    )
                np.copyto(target, result)
                result = target
            self._results.append(OrtValue(result))

    def get_outputs(self) -> OrtValueVector:
        """The outputs of the last run, in binding order, as OrtValues."""
        return OrtValueVector(self._results)

    def get_outputs_as_ortvaluevector(self) -> OrtValueVector:
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list:
        """The outputs of the last run as numpy arrays (copies)."""
        return [
            np.array(v.numpy(), copy=True) if v.is_tensor() else v.numpy() for v in self._results
        ]
