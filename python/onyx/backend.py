"""An ONNX backend (``onnx.backend.base.Backend``) over onyx, so the official test suite runs::

    import onnx.backend.test
    import onyx.backend
    globals().update(onnx.backend.test.BackendTest(onyx.backend, __name__).test_cases)

or, for one-off use::

    outputs = onyx.backend.run_model(model, [x])     # a tuple named by the model's outputs
    (y,) = onyx.backend.run_node(node, [x])           # one node, in a model made around it

Needs the ``onnx`` package (``pip install onyx[backend]``).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

try:
    import onnx
    from onnx import helper
    from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"onyx.backend needs the onnx package (pip install 'onyx[backend]'): {e}") from e

from onyx import InvalidArgument
from onyx.session import InferenceSession

__all__ = [
    "OnyxBackend",
    "OnyxBackendRep",
    "is_compatible",
    "prepare",
    "run_model",
    "run_node",
    "supports_device",
]


class OnyxBackendRep(BackendRep):
    """A prepared model: ``run(inputs)`` returns the outputs as a tuple named after them."""

    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self._input_names = [i.name for i in session.get_inputs()]
        self._output_names = [o.name for o in session.get_outputs()]

    def run(self, inputs: Any, **kwargs: Any) -> Tuple[Any, ...]:
        """Runs on `inputs`: a list bound in order to the inputs that must be fed (fewer leave
        trailing optional inputs unfed), a dict by name, or one array for a one-input model."""
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) > len(self._input_names):
                raise InvalidArgument(
                    f"{len(inputs)} inputs given, the model takes {len(self._input_names)}: "
                    f"{self._input_names}"
                )
            feeds = dict(zip(self._input_names, inputs))
        else:
            if len(self._input_names) != 1:
                raise InvalidArgument(
                    f"one input given, the model takes {len(self._input_names)}: {self._input_names}"
                )
            feeds = {self._input_names[0]: inputs}
        outputs = self.session.run(None, feeds)
        return namedtupledict("Outputs", self._output_names)(*outputs)


class OnyxBackend(Backend):
    """onyx as an ONNX backend: CPU only."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return Device(device).type == DeviceType.CPU

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(
        cls, model: Union[onnx.ModelProto, str, bytes], device: str = "CPU", **kwargs: Any
    ) -> OnyxBackendRep:
        """Loads and plans `model` (a ModelProto, a path or bytes). Keyword arguments go to
        :class:`onyx.InferenceSession` (threads, optimization, sess_options, ...)."""
        if not cls.supports_device(device):
            raise InvalidArgument(f"onyx runs on the CPU only, not on {device!r}")
        options = {k: kwargs[k] for k in ("sess_options", "threads", "optimization") if k in kwargs}
        return OnyxBackendRep(InferenceSession(model, **options))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> Tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Optional[Sequence[Tuple[np.dtype, Tuple[int, ...]]]] = None,
        **kwargs: Any,
    ) -> Tuple[Any, ...]:
        """Runs one node on numpy `inputs` (a list in the node's input order, or a dict by
        name), in a model built around it at ``kwargs['opset_version']`` (default: the newest
        opset the installed onnx knows)."""
        names = [n for n in node.input if n]
        if isinstance(inputs, Mapping):
            values = [inputs[n] for n in names]
        else:
            values = list(inputs)
        if len(values) != len(names):
            raise InvalidArgument(f"node {node.op_type} has {len(names)} inputs, got {len(values)}")
        graph_inputs = [_value_info(n, v) for n, v in zip(names, values)]
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        if outputs_info:
            graph_outputs = [
                helper.make_tensor_value_info(n, _elem_type(np.dtype(dt)), shape)
                for n, (dt, shape) in zip([n for n in node.output if n], outputs_info)
            ]
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        graph = helper.make_graph([node], f"run_node_{node.op_type}", graph_inputs, graph_outputs)
        opsets = [helper.make_opsetid("", opset)]
        if node.domain and node.domain != "ai.onnx":
            opsets.append(helper.make_opsetid(node.domain, kwargs.get("domain_version", 1)))
        model = helper.make_model(graph, opset_imports=opsets)
        rep = cls.prepare(model, device, **kwargs)
        return rep.run(dict(zip(names, values)))


def _elem_type(dtype: np.dtype) -> int:
    if dtype.kind in "USO":
        return onnx.TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(dtype)


def _value_info(name: str, value: Any) -> onnx.ValueInfoProto:
    if isinstance(value, list):
        elem = _elem_type(np.asarray(value[0]).dtype) if value else onnx.TensorProto.FLOAT
        return helper.make_value_info(
            name, helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, None))
        )
    array = np.asarray(value)
    return helper.make_tensor_value_info(name, _elem_type(array.dtype), array.shape)


# Module-level functions, so the module itself can be handed to onnx.backend.test.BackendTest.
is_compatible = OnyxBackend.is_compatible
prepare = OnyxBackend.prepare
run_model = OnyxBackend.run_model
run_node = OnyxBackend.run_node
supports_device = OnyxBackend.supports_device
