"""InferenceSession: onnxruntime's Python API over the onyx engine."""
from __future__ import annotations

import copy
import json
import os
import threading
import time
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from onyx import _log, _onyx
from onyx.options import (
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
    cache_limit,
    optimization_name,
)
from onyx.ortvalue import IOBinding, OrtValue, OrtValueVector, numpy_dtype_of

__all__ = [
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "get_all_providers",
    "get_available_providers",
    "get_device",
]

_CPU = "CPUExecutionProvider"

# onnxruntime's execution provider names, highest priority first (its get_all_providers() order;
# the CPU last). onyx offers only the CPU; the others are known so that naming one warns instead
# of failing as an unknown name.
_ALL_PROVIDERS = [
    "TensorrtExecutionProvider",
    "CUDAExecutionProvider",
    "MIGraphXExecutionProvider",
    "ROCMExecutionProvider",
    "OpenVINOExecutionProvider",
    "DnnlExecutionProvider",
    "VitisAIExecutionProvider",
    "QNNExecutionProvider",
    "NnapiExecutionProvider",
    "VSINPUExecutionProvider",
    "JsExecutionProvider",
    "CoreMLExecutionProvider",
    "ArmNNExecutionProvider",
    "ACLExecutionProvider",
    "DmlExecutionProvider",
    "RknpuExecutionProvider",
    "WebNNExecutionProvider",
    "WebGpuExecutionProvider",
    "XnnpackExecutionProvider",
    "CANNExecutionProvider",
    "AzureExecutionProvider",
    _CPU,
]


def get_available_providers() -> list[str]:
    """Execution providers onyx offers: onnxruntime's name for its one backend, the CPU."""
    return [_CPU]


def get_all_providers() -> list[str]:
    """Every execution provider name onnxruntime knows, the CPU last (onyx offers only the CPU)."""
    return list(_ALL_PROVIDERS)


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


class ModelMetadata:
    """A model's metadata, as ``onnxruntime.ModelMetadata``: ModelProto and GraphProto fields.

    ``custom_metadata_map`` holds the model's ``metadata_props`` (exporters keep things such as
    class names there); ``version`` is ``model_version`` (2**63 - 1 when unset, as onnxruntime
    reports it).
    """

    __slots__ = (
        "producer_name",
        "graph_name",
        "domain",
        "description",
        "graph_description",
        "version",
        "custom_metadata_map",
    )

    def __init__(self, fields: Mapping[str, Any]) -> None:
        for name in self.__slots__:
            setattr(self, name, fields[name])

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"ModelMetadata({fields})"


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


def _options_from_model(source: str | bytes, options: SessionOptions) -> SessionOptions:
    """onnxruntime's ORT_LOAD_CONFIG_FROM_MODEL=1: a copy of ``options`` updated from the model's
    ``ort_config`` metadata entry, JSON ``{"session_options": {attribute: value}}``."""
    text = _onyx.model_metadata(source)["custom_metadata_map"].get("ort_config")
    if text is None:
        return options
    from onyx import InvalidArgument  # noqa: PLC0415

    try:
        settings = json.loads(text).get("session_options", {})
    except (ValueError, AttributeError) as e:
        raise InvalidArgument(
            f"the model's ort_config metadata is not a JSON object: {e}"
        ) from None
    updated = copy.copy(options)
    for name in ("_config", "_dims_by_name", "_dims_by_denotation", "_external_files"):
        if hasattr(options, name):
            setattr(updated, name, dict(getattr(options, name)))
    for name, value in settings.items():
        current = getattr(updated, name, None) if not name.startswith("_") else None
        if current is None or callable(current):
            raise InvalidArgument(f"the model's ort_config sets unknown session option {name!r}")
        if isinstance(current, (bool, int, str)):
            value = type(current)(value)  # enums and flags keep their types
        setattr(updated, name, value)
    return updated


def _check_providers(providers: Sequence[Any] | None, strict: bool = False) -> None:
    if not providers:
        return
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    unknown = [n for n in names if n not in _ALL_PROVIDERS]
    if strict and unknown:
        # onnxruntime's wording, which callers match on.
        raise RuntimeError(
            f"Unknown Provider Type: {unknown[0]} (onyx runs on {_CPU}; "
            f"known: {', '.join(_ALL_PROVIDERS)})"
        )
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

    __slots__ = (
        "_sess",
        "_options",
        "_inputs",
        "_initializers",
        "_outputs",
        "_source",
        "_required",
        "_string_inputs",
        "_feed_dtypes",
        "_profile",
        "_profile_start_ns",
        "_profile_t0",
        "_profile_lock",
        "__weakref__",
    )

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
        source = _model_source(path_or_bytes)
        if os.environ.get("ORT_LOAD_CONFIG_FROM_MODEL") == "1":
            options = _options_from_model(source, options)
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
        self._source = source
        profiling = bool(getattr(options, "enable_profiling", False))
        self._profile: list | None = [] if profiling else None
        self._profile_lock = threading.Lock()
        self._profile_start_ns = time.time_ns() if profiling else 0
        self._profile_t0 = time.monotonic_ns()
        self._sess = _onyx.Session(
            self._source,
            int(threads or 0),
            optimization_name(optimization),
            bool(reference_kernels),
            str(conv_algorithm),
            max_shape_plans=cache_limit(options, "max_shape_plans"),
            max_shape_plan_bytes=cache_limit(options, "max_shape_plan_bytes"),
            specialize_after_runs=cache_limit(options, "specialize_after_runs"),
            adapt_threads=bool(options.adapt_threads),
            precision=str(getattr(options, "precision", "fp32")),
            initializers=list(getattr(options, "_initializers", [])) or None,
            dims_by_name=dict(getattr(options, "_dims_by_name", {})),
            dims_by_denotation=dict(getattr(options, "_dims_by_denotation", {})),
            external_files=dict(getattr(options, "_external_files", {})) or None,
            deterministic=bool(getattr(options, "deterministic", False))
            or bool(getattr(options, "use_deterministic_compute", False)),
            max_isa=str(getattr(options, "max_isa", "") or ""),
        )
        required = set(self._sess.required_inputs())
        inputs = self._sess.inputs()
        self._inputs = [_node_arg(d) for d in inputs if d["name"] in required]
        self._initializers = [_node_arg(d) for d in inputs if d["name"] not in required]
        self._outputs = [_node_arg(d) for d in self._sess.outputs()]
        self._required = tuple(i.name for i in self._inputs)
        self._string_inputs = frozenset(d["name"] for d in inputs if d["type"] == "tensor(string)")
        # Lists fed to tensor inputs become arrays of the declared type, as onnxruntime does.
        self._feed_dtypes = {d["name"]: numpy_dtype_of(d["type"]) for d in inputs}
        if profiling:
            self._profile_event("Session", "session_initialization", self._profile_t0,
                                time.monotonic_ns() - self._profile_t0, {})
        target = getattr(options, "optimized_model_filepath", "")
        if target:
            self._save_model(os.fspath(target))
        if _log.enabled(_log.INFO):
            logid = str(getattr(options, "logid", ""))
            where = "session.py InferenceSession"
            _log.emit(_log.VERBOSE, f"session options: {options!r}", logid, where)
            _log.emit(
                _log.INFO,
                f"session created for {self._sess.model_name}: {len(self._inputs)} inputs, "
                f"{len(self._outputs)} outputs, {self._sess.intra_op_threads} threads, "
                f"optimization {optimization_name(optimization)!r}",
                logid,
                where,
            )

    def _save_model(self, path: str) -> None:
        """SessionOptions.optimized_model_filepath: the model's graph as given (onyx optimizes in
        its plan, not in ONNX), initializers inline or in the configured external-data file."""
        config = getattr(self._options, "_config", {})
        external = config.get("session.optimized_model_external_initializers_file_name", "")
        min_bytes = config.get(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        try:
            min_size = int(min_bytes)
        except ValueError:
            from onyx import InvalidArgument  # noqa: PLC0415

            raise InvalidArgument(
                "session.optimized_model_external_initializers_min_size_in_bytes must be an "
                f"integer, got {min_bytes!r}"
            ) from None
        _onyx.save_model(self._source, path, external, min_size)

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
        """False when the model uses a random operator (Bernoulli, RandomNormal, ...). Not
        deterministic mode (:attr:`deterministic_mode`)."""
        return self._sess.deterministic

    @property
    def deterministic_mode(self) -> bool:
        """onyx only: whether the session runs in deterministic mode
        (``SessionOptions.deterministic`` or ``use_deterministic_compute``; docs/determinism.md)."""
        return self._sess.deterministic_mode

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
        return self._run(output_names, input_feed, run_options)

    def _run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None,
        output_buffers: Mapping[str, np.ndarray] | None = None,
    ) -> list:
        """run(), and for IOBinding: outputs computed straight into `output_buffers` arrays where
        the engine can (same type and shape, 64-byte aligned); those come back as the arrays."""
        names = list(output_names) if output_names else None
        feed = self._prepare_feed(input_feed)
        flag = None
        timeout_ms = 0
        if run_options is not None:
            # Leniently, as before: an object that is not an onyx RunOptions cancels nothing.
            flag = getattr(run_options, "_flag", None)
            timeout_ms = int(getattr(run_options, "timeout_ms", 0) or 0)
        if self._profile is None:
            if run_options is None and output_buffers is None:
                return self._sess.run(feed, names)
            return self._sess.run(feed, names, terminate=flag, timeout_ms=timeout_ms,
                                  output_buffers=output_buffers)
        steps: list = []
        start = time.monotonic_ns()
        try:
            return self._sess.run(feed, names, terminate=flag, timeout_ms=timeout_ms,
                                  profile=steps, output_buffers=output_buffers)
        finally:
            self._record_run(start, steps)

    def _prepare_feed(self, input_feed: Mapping[str, Any]) -> Mapping[str, Any]:
        """Checks for missing inputs and converts lists and OrtValues; arrays pass untouched."""
        # Kept cheap: it runs on every call, mostly for a dict of arrays that needs nothing.
        try:
            items = input_feed.items()
        except AttributeError:
            return input_feed  # the engine says what a feed must be
        for required in self._required:
            if required not in input_feed:
                self._raise_missing(input_feed)
        converted = None
        for name, value in items:
            kind = type(value)
            if kind is np.ndarray:
                if name not in self._string_inputs or value.dtype.kind != "V":
                    continue
                # Raw byte records (numpy void) feed a string input as bytes, as in onnxruntime.
                records = [bytes(v) for v in value.ravel()]
                value = np.array(records, dtype=object).reshape(value.shape)
            elif kind is OrtValue:
                value = value._value
            elif kind is list or kind is tuple:
                dtype = self._feed_dtypes.get(name)
                if dtype is None:
                    continue  # a sequence input, or a type numpy lacks: fed as given
                try:
                    value = np.array(value, dtype=dtype)
                except (ValueError, TypeError) as e:
                    from onyx import InvalidArgument  # noqa: PLC0415

                    raise InvalidArgument(
                        f"input '{name}': cannot make a numpy array of the {kind.__name__} "
                        f"given: {e}"
                    ) from None
            else:
                continue
            if converted is None:
                converted = dict(input_feed)
            converted[name] = value
        return input_feed if converted is None else converted

    def _raise_missing(self, input_feed: Mapping[str, Any]) -> None:
        keys = list(input_feed.keys())
        if not all(k in self._feed_dtypes for k in keys):
            return  # the engine reports the unknown name first, naming the model's inputs
        missing = [i.name for i in self._inputs if i.name not in input_feed]
        from onyx import InvalidArgument  # noqa: PLC0415

        # onyx's wording, then onnxruntime's, which callers match on.
        raise InvalidArgument(
            f"missing input {', '.join(repr(m) for m in missing)}: "
            f"Required inputs ({missing}) are missing from input feed ({keys})."
        )

    def run_with_ort_values(
        self,
        output_names: Sequence[str] | None,
        input_dict_ort_values: Mapping[str, OrtValue],
        run_options: RunOptions | None = None,
    ) -> list[OrtValue]:
        """:meth:`run` with OrtValues in and out."""
        return [OrtValue(v) for v in self.run(output_names, input_dict_ort_values, run_options)]

    def run_async(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        callback: Callable[[Any, Any, str], None],
        user_data: Any,
        run_options: RunOptions | None = None,
    ) -> None:
        """Runs on another thread and calls ``callback(outputs, user_data, error)``: ``error`` is
        ``""`` on success, else the error's message (``outputs`` is then None)."""
        feed = dict(input_feed)

        def work() -> None:
            try:
                outputs = self.run(output_names, feed, run_options)
            except Exception as e:  # noqa: BLE001 (reported to the callback, as onnxruntime does)
                callback(None, user_data, str(e) or type(e).__name__)
                return
            callback(outputs, user_data, "")

        threading.Thread(target=work, name="onyx-run-async", daemon=True).start()

    def io_binding(self) -> IOBinding:
        """A new :class:`IOBinding` for :meth:`run_with_iobinding`."""
        return IOBinding(self)

    def run_with_iobinding(
        self, iobinding: IOBinding, run_options: RunOptions | None = None
    ) -> None:
        """Runs on the inputs bound in ``iobinding``; its outputs then hold the results."""
        iobinding._run(run_options)

    def get_modelmeta(self) -> ModelMetadata:
        """The model's metadata (read from the model file or bytes when asked)."""
        return ModelMetadata(_onyx.model_metadata(self._source))

    def set_providers(
        self, providers: Sequence[Any] | None = None, provider_options: Sequence[dict] | None = None
    ) -> None:
        """Accepted for onnxruntime compatibility: onyx keeps running on the CPU. An unknown name
        raises RuntimeError, another provider's name warns."""
        _check_providers(providers, strict=True)

    def disable_fallback(self) -> None:
        """Accepted for onnxruntime compatibility (onyx has no other provider to fall back from)."""

    def enable_fallback(self) -> None:
        """Accepted for onnxruntime compatibility."""

    # -- profiling -------------------------------------------------------------------------------
    def _profile_event(self, cat: str, name: str, start_ns: int, dur_ns: int, args: dict,
                       tid: int | None = None) -> None:
        event = {
            "cat": cat,
            "pid": os.getpid(),
            "tid": threading.get_native_id() if tid is None else tid,
            "dur": max(dur_ns // 1000, 0),
            "ts": max((start_ns - self._profile_t0) // 1000, 0),
            "ph": "X",
            "name": name,
            "args": args,
        }
        with self._profile_lock:
            if self._profile is not None:  # end_profiling() may have run meanwhile
                self._profile.append(event)

    def _record_run(self, start_ns: int, steps: list) -> None:
        end = time.monotonic_ns()
        for node, op, domain, impl, s_ns, d_ns, thread, depth, fused, shapes in steps:
            args = {"op_name": op, "provider": _CPU, "impl": impl, "output_shapes": shapes}
            if domain:
                args["domain"] = domain
            if depth:
                args["subgraph_depth"] = depth
            if fused:
                args["fused_nodes"] = fused
            self._profile_event("Node", f"{node or op}_kernel_time", s_ns, d_ns, args, tid=thread)
        self._profile_event("Session", "model_run", start_ns, end - start_ns, {})

    def end_profiling(self) -> str:
        """Writes the profile (Chrome trace JSON, one event per line; chrome://tracing and
        Perfetto open it) to ``<profile_file_prefix>_<date>_<time>.json`` and returns the file
        name; profiling then stops. Returns ``""`` when profiling is off."""
        if self._profile is None:
            return ""
        with self._profile_lock:
            events, self._profile = self._profile, None
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(self._profile_start_ns / 1e9))
        prefix = getattr(self._options, "profile_file_prefix", "onnxruntime_profile_")
        path = f"{prefix}_{stamp}.json"
        with open(path, "w", encoding="utf-8") as f:
            f.write("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
        return path

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started (ns since the epoch); 0 when profiling is off."""
        return self._profile_start_ns

    def __repr__(self) -> str:
        return (
            f"<onyx.InferenceSession {self._sess.model_name!r}: "
            f"{len(self._inputs)} inputs, {len(self._outputs)} outputs>"
        )


def _native_run_with_ort_values(
    native: Any, feeds: Mapping[str, OrtValue], output_names: Sequence[str] | None,
    run_options: RunOptions | None = None,
) -> OrtValueVector:
    """onnxruntime's native-level ``sess._sess.run_with_ort_values(feeds, names, run_options)``."""
    values = {name: v._value if isinstance(v, OrtValue) else v for name, v in feeds.items()}
    kwargs = {}
    if run_options is not None:
        kwargs = {"terminate": getattr(run_options, "_flag", None),
                  "timeout_ms": int(getattr(run_options, "timeout_ms", 0) or 0)}
    names = list(output_names) if output_names else None
    return OrtValueVector([OrtValue(v) for v in native.run(values, names, **kwargs)])


# Code written for onnxruntime reaches the native session as `sess._sess`; give it this method.
_onyx.Session.run_with_ort_values = _native_run_with_ort_values


def _node_arg(d: dict[str, Any]) -> NodeArg:
    return NodeArg(d["name"], d["type"], d["shape"])
