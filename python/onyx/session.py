"""InferenceSession: onnxruntime's Python API over the onyx engine."""
from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

from onyx import _onyx
from onyx.options import (
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
    cache_limit,
    optimization_name,
)

__all__ = ["InferenceSession", "NodeArg", "get_available_providers", "get_device"]

_CPU = "CPUExecutionProvider"


def get_available_providers() -> list[str]:
    """Execution providers onyx offers: onnxruntime's name for its one backend, the CPU."""
    return [_CPU]


def get_device() -> str:
    """The device onyx runs on (always ``"CPU"``), as ``onnxruntime.get_device()``."""
    return "CPU"


class NodeArg:
    """A graph input or output: ``name``, ``type`` and ``shape``, as onnxruntime reports them.

    ``type`` is a string such as ``'tensor(float)'``, ``'seq(tensor(int64))'`` or
    ``'optional(tensor(float))'``. ``shape`` lists ints for known dimensions, the symbol (a str)
    for named symbolic ones and None for unnamed unknown ones; it is ``[]`` for scalars, for
    tensors of unknown rank and for sequences and optionals.
    """

    __slots__ = ("name", "type", "shape")

    def __init__(self, name: str, type: str, shape: list[int | str | None]) -> None:  # noqa: A002
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeArg):
            return NotImplemented
        return (self.name, self.type, self.shape) == (other.name, other.type, other.shape)


def _model_source(path_or_bytes: Any) -> str | bytes:
    if isinstance(path_or_bytes, (str, os.PathLike)):
        return os.fspath(path_or_bytes)
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    if hasattr(path_or_bytes, "SerializeToString"):  # an onnx.ModelProto
        return path_or_bytes.SerializeToString()
    raise TypeError(
        "InferenceSession expects a model path (str or os.PathLike) or serialized model bytes, "
        f"got {type(path_or_bytes).__name__}"
    )


def _check_providers(providers: Sequence[Any] | None) -> None:
    if not providers:
        return
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    others = [n for n in names if n != _CPU]
    if others:
        warnings.warn(
            f"onyx runs on the CPU only; ignoring the providers {others} "
            f"(available: {get_available_providers()})",
            stacklevel=3,
        )


class InferenceSession:
    """Loads an ONNX model once and runs it on numpy arrays, like ``onnxruntime.InferenceSession``.

    Code written for onnxruntime ports by changing the import::

        import onyx as ort            # instead of: import onnxruntime as ort
        sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        (probs,) = sess.run(None, {name: x})

    Args:
        path_or_bytes: a model file path (str or os.PathLike), the serialized ModelProto bytes,
            or an ``onnx.ModelProto``. External weights resolve next to the file; a model given as
            bytes cannot use external data.
        sess_options: a :class:`SessionOptions` (threads, optimization level, the bounds of the
            cache of per-input-shape plans).
        providers: accepted for onnxruntime compatibility; onyx runs on the CPU, and other names
            only raise a warning.
        provider_options: accepted and ignored.
        threads: threads each kernel may use; overrides ``sess_options.intra_op_num_threads``.
            0 or None means one per core.
        optimization: ``"none"``, ``"basic"``, ``"all"`` or a :class:`GraphOptimizationLevel`;
            overrides ``sess_options.graph_optimization_level``.
        intra_op_threads: older spelling of ``threads``.
        reference_kernels: run every operator on its reference kernel (slow; for testing).
        conv_algorithm: ``"auto"`` or ``"direct"`` (no Winograd); overrides
            ``sess_options.conv_algorithm``.

    The model is loaded, checked and planned here; anything onyx cannot run raises now, naming
    the node. Every error is an :class:`onyx.Error`: :class:`onyx.InvalidModel` for bytes that
    are not a valid model, :class:`onyx.NotFound` for a missing file, :class:`onyx.Unsupported`
    for an operator or type onyx lacks.

    One session may be run from several Python threads at once: :meth:`run` releases the GIL
    while the model runs.
    """

    __slots__ = ("_sess", "_options", "_inputs", "_initializers", "_outputs", "__weakref__")

    def __init__(
        self,
        path_or_bytes: str | bytes | os.PathLike,
        sess_options: SessionOptions | None = None,
        providers: Sequence[str | tuple] | None = None,
        provider_options: Sequence[dict] | None = None,
        *,
        threads: int | None = None,
        optimization: str | GraphOptimizationLevel | None = None,
        intra_op_threads: int | None = None,
        reference_kernels: bool | None = None,
        conv_algorithm: str | None = None,
    ) -> None:
        _check_providers(providers)
        options = sess_options if sess_options is not None else SessionOptions()
        if threads is None:
            threads = intra_op_threads
        if threads is None:
            threads = options.intra_op_num_threads
        if optimization is None:
            optimization = options.graph_optimization_level
        if reference_kernels is None:
            reference_kernels = options.reference_kernels
        if conv_algorithm is None:
            conv_algorithm = options.conv_algorithm
        self._options = options
        self._sess = _onyx.Session(
            _model_source(path_or_bytes),
            int(threads or 0),
            optimization_name(optimization),
            bool(reference_kernels),
            str(conv_algorithm),
            max_shape_plans=cache_limit(options, "max_shape_plans"),
            max_shape_plan_bytes=cache_limit(options, "max_shape_plan_bytes"),
            specialize_after_runs=cache_limit(options, "specialize_after_runs"),
            adapt_threads=bool(options.adapt_threads),
            precision=str(getattr(options, "precision", "fp32")),
        )
        required = set(self._sess.required_inputs())
        inputs = self._sess.inputs()
        self._inputs = [_node_arg(d) for d in inputs if d["name"] in required]
        self._initializers = [_node_arg(d) for d in inputs if d["name"] not in required]
        self._outputs = [_node_arg(d) for d in self._sess.outputs()]

    def get_inputs(self) -> list[NodeArg]:
        """The inputs to feed, in model order.

        Like onnxruntime, inputs that have an initializer (models before IR 4 list them) are left
        out; :meth:`get_overridable_initializers` returns those.
        """
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs, in model order, with their declared types and shapes."""
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        """Graph inputs that have an initializer default; feeding one overrides it."""
        return list(self._initializers)

    def get_providers(self) -> list[str]:
        """``['CPUExecutionProvider']``: onyx's one backend, under onnxruntime's name."""
        return get_available_providers()

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        return {_CPU: {}}

    def get_session_options(self) -> SessionOptions:
        """The options the session was made with."""
        return self._options

    @property
    def intra_op_threads(self) -> int:
        """Threads the session runs kernels on (0 in the options resolved to the core count)."""
        return self._sess.intra_op_threads

    @property
    def deterministic(self) -> bool:
        """False when the model uses a random operator (Bernoulli, RandomNormal, ...)."""
        return self._sess.deterministic

    def get_shape_plan_stats(self) -> dict[str, int]:
        """onyx only (onnxruntime has no counterpart): the cache of per-input-shape plans.

        A session plans once per distinct set of input shapes and keeps those plans in a least
        recently used cache bounded by ``SessionOptions.max_shape_plans`` and
        ``max_shape_plan_bytes``; every plan shares the session's packed weights. Returns a dict
        of ints:

        - ``plans``: plans cached now (the one for the declared shapes included);
        - ``plan_bytes``: bytes of shape-specific constants they hold;
        - ``builds``: plans built for new input shapes since the session was made;
        - ``hits``: runs that found their plan cached (or being built by another thread);
        - ``evictions``: plans dropped for the limits;
        - ``generic_runs``: runs of a shape not planned yet, on the shape-generic plan made at
          creation (a shape gets its own plan on its ``specialize_after_runs``-th run);
        - ``packed_weight_bytes``: weights in kernels' packed layouts, one copy for all plans;
        - ``shared_constant_bytes``: constants derived from weights, one copy for all plans;
        - ``free_arena_bytes``: run arenas kept for the next runs;
        - ``max_shape_plans``, ``max_shape_plan_bytes``, ``specialize_after_runs``: the settings
          in force (options, else the environment variables ``ONYX_MAX_SHAPE_PLANS`` /
          ``ONYX_MAX_SHAPE_PLAN_BYTES`` / ``ONYX_SPECIALIZE_AFTER_RUNS``, else the defaults).
        """
        return self._sess.shape_plan_stats()

    def get_runs_by_threads(self) -> dict[int, int]:
        """onyx only: runs so far by the thread count they ran at. With
        ``SessionOptions.adapt_threads`` (the default) a run may use fewer than
        ``intra_op_num_threads`` threads when that was faster lately (a busy host)."""
        return dict(self._sess.runs_by_threads())

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None = None,
    ) -> list:
        """Runs the model and returns the requested outputs as a list.

        Args:
            output_names: names of the outputs to return, in that order; None (or empty) for all
                of them in model order.
            input_feed: ``{input name: value}``. A tensor is a numpy array (or anything
                ``numpy.asarray`` accepts) of the input's element type; a sequence is a list of
                arrays; an empty optional is None. Element types: float32/float64/float16,
                (u)int8..64, bool, complex, str/bytes or object arrays for strings, and
                ml_dtypes' bfloat16, float8_* , float4_e2m1fn, int4/uint4, int2/uint2.
            run_options: a :class:`RunOptions`; its ``terminate`` flag (settable from another
                thread) and ``timeout_ms`` stop the run with :class:`onyx.Cancelled`.

        Returns:
            One entry per requested output: a numpy array the caller owns, a list of arrays for
            a sequence, None for an empty optional.

        Raises:
            onyx.InvalidArgument: an unknown input or output name, a missing required input, a
                wrong element type, rank or dimension. Feeds are checked before anything runs.
            onyx.Cancelled: ``run_options.terminate`` was set or ``run_options.timeout_ms``
                passed; the session stays usable.
            onyx.Error: any other engine error, with the engine's message naming the node.

        Contiguous arrays are read in place, not copied; the GIL is released while the model
        runs, so several threads may call ``run`` on one session concurrently.
        """
        names = list(output_names) if output_names else None
        if run_options is None:
            return self._sess.run(input_feed, names)
        # Leniently, as before: an object that is not an onyx RunOptions cancels nothing.
        flag = getattr(run_options, "_flag", None)
        timeout_ms = int(getattr(run_options, "timeout_ms", 0) or 0)
        return self._sess.run(input_feed, names, terminate=flag, timeout_ms=timeout_ms)

    def __repr__(self) -> str:
        return (
            f"<onyx.InferenceSession {self._sess.model_name!r}: "
            f"{len(self._inputs)} inputs, {len(self._outputs)} outputs>"
        )


def _node_arg(d: dict[str, Any]) -> NodeArg:
    return NodeArg(d["name"], d["type"], d["shape"])
