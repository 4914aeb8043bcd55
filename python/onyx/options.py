"""Session and run options, named and shaped like onnxruntime's so existing code ports unchanged.

Only the settings onyx acts on change anything (threads, optimization level, profiling, model
edits, ...); onnxruntime's other tuning attributes are accepted and ignored, so scripts that set
them still run. A name that is neither onyx's nor onnxruntime's raises AttributeError, as in
onnxruntime.
"""
from __future__ import annotations

import enum
from typing import Any, Dict, List, Sequence, Union

__all__ = [
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "RunOptions",
    "SessionOptions",
]


class GraphOptimizationLevel(enum.IntEnum):
    """Graph optimization levels, with onnxruntime's names and values.

    onyx has three levels: ``ORT_DISABLE_ALL`` runs the graph as written ("none"),
    ``ORT_ENABLE_BASIC`` folds constants ("basic"), and ``ORT_ENABLE_EXTENDED`` /
    ``ORT_ENABLE_ALL`` also fuse operators (Conv+BatchNormalization, ...) ("all", the default).
    """

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for onnxruntime compatibility; onyx always runs nodes in schedule order."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """Accepted for onnxruntime compatibility; onyx orders nodes by its own schedule."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


_LEVEL_NAMES = {
    GraphOptimizationLevel.ORT_DISABLE_ALL: "none",
    GraphOptimizationLevel.ORT_ENABLE_BASIC: "basic",
    GraphOptimizationLevel.ORT_ENABLE_EXTENDED: "all",
    GraphOptimizationLevel.ORT_ENABLE_ALL: "all",
}


def optimization_name(level: Union[GraphOptimizationLevel, int, str]) -> str:
    """The engine's name ("none", "basic", "all") for a level given as enum, int or name."""
    if isinstance(level, str):
        if level not in ("none", "basic", "all"):
            from onyx import InvalidArgument  # noqa: PLC0415 (avoids an import cycle)

            raise InvalidArgument(f"optimization level must be 'none', 'basic' or 'all', got {level!r}")
        return level
    return _LEVEL_NAMES[GraphOptimizationLevel(level)]


class SessionOptions:
    """Options for :class:`onyx.InferenceSession`, with onnxruntime's attribute names.

    Attributes onyx uses:
        intra_op_num_threads: threads each kernel may use; 0 (default) means one per core.
        graph_optimization_level: a :class:`GraphOptimizationLevel` (default ``ORT_ENABLE_ALL``).
        reference_kernels: onyx only; run every operator on its plain reference kernel (slow,
            the oracle the fast kernels are tested against).
        conv_algorithm: onyx only; ``"auto"`` (default) lets 3x3 convolutions use Winograd's
            algorithm where it is faster (x86; float32 rounding errors a few times those of
            direct summation), ``"direct"`` never does.
        max_shape_plans: onyx only; how many per-input-shape plans the session keeps (least
            recently used dropped first; the plan for the declared shapes is kept besides).
            0 (default) means the ``ONYX_MAX_SHAPE_PLANS`` environment variable, or else onyx's
            default. Each plan shares the session's packed weights.
        max_shape_plan_bytes: onyx only; the same cache bounded by the bytes of shape-specific
            constants its plans hold. 0 (default) means ``ONYX_MAX_SHAPE_PLAN_BYTES``, or else
            onyx's default. :meth:`InferenceSession.get_shape_plan_stats` shows the values in
            force.
        specialize_after_runs: onyx only; a model with symbolic input dims runs a new input shape
            on its shape-generic plan (made once, for the declared shapes) and gives the shape a
            plan of its own on this many-th run. 1 plans every new shape at once; 0 (default)
            means ``ONYX_SPECIALIZE_AFTER_RUNS``, or else onyx's default (8).
        adapt_threads: onyx only; True (default) lets a run use fewer than intra_op_num_threads
            threads when the latest runs of its plan finished sooner that way (a host whose other
            processes hold cores; docs/threading.md). False, or the environment variable
            ``ONYX_ADAPT_THREADS=0``: every run uses intra_op_num_threads.
        deterministic: onyx only; True runs in deterministic mode (docs/determinism.md): outputs
            bitwise identical across runs and across intra_op_num_threads values. Kernels not
            audited as thread-count invariant give way to others; a random operator without a
            ``seed`` attribute, and ``precision="bf16"``, make creating the session fail.
            onnxruntime's ``use_deterministic_compute = True`` turns it on too.
        max_isa: onyx only; the highest ISA level kernels may use (``"scalar"``, ``"sse4"``,
            ``"avx2"``, ``"avx512"``, ... on x86; ``"neon"``, ``"sve"``, ... on Arm), below the
            process's ``ONYX_ISA`` cap; ``""`` (default) leaves that cap. A level this CPU or the
            process cap does not allow makes creating the session fail (docs/isa.md).
        precision: onyx only; ``"fp32"`` (default) or ``"bf16"``: convolutions take bfloat16
            operands (float32 accumulation and outputs) where the CPU computes bfloat16 natively
            (AVX512-BF16 or AMX; elsewhere creating the session fails). About twice as fast on
            ResNet-50 with AMX, outputs ~1e-2 relative from float32 (docs/quantization.md).

    onnxruntime attributes onyx acts on:
        use_deterministic_compute: True turns on deterministic mode (as ``deterministic``).
        enable_profiling, profile_file_prefix: write a Chrome-trace JSON file of every kernel
            step (:meth:`InferenceSession.end_profiling`).
        optimized_model_filepath: write the model to this ONNX file when the session is made
            (its graph as given: onyx's optimizations are made in its plan, not as ONNX nodes),
            with the initializers inline or, with the session config entries
            ``session.optimized_model_external_initializers_file_name`` and
            ``..._min_size_in_bytes``, in an external-data file next to it.
        add_initializer(), add_external_initializers(),
        add_external_initializers_from_files_in_memory(), add_free_dimension_override_by_name(),
        add_free_dimension_override_by_denotation(): edits to the model as it is loaded.

    Accepted and ignored (onnxruntime tuning knobs that have no onyx counterpart):
        inter_op_num_threads, execution_mode, execution_order, log_severity_level,
        log_verbosity_level, enable_cpu_mem_arena, enable_mem_pattern, enable_mem_reuse,
        use_per_session_threads, logid; and session config entries
        other than the two above (add_session_config_entry() records them,
        get_session_config_entry() returns them). register_custom_ops_library() raises
        :class:`onyx.Unsupported`.
    """

    __slots__ = (
        "intra_op_num_threads",
        "graph_optimization_level",
        "reference_kernels",
        "conv_algorithm",
        "max_shape_plans",
        "max_shape_plan_bytes",
        "specialize_after_runs",
        "adapt_threads",
        "deterministic",
        "max_isa",
        "precision",
        "inter_op_num_threads",
        "execution_mode",
        "log_severity_level",
        "log_verbosity_level",
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
        "enable_profiling",
        "logid",
        "profile_file_prefix",
        "optimized_model_filepath",
        "enable_mem_reuse",
        "use_deterministic_compute",
        "use_per_session_threads",
        "execution_order",
        "_config",
        "_initializers",
        "_dims_by_name",
        "_dims_by_denotation",
        "_external_files",
    )

    def __init__(self) -> None:
        self.intra_op_num_threads: int = 0
        self.graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.reference_kernels: bool = False
        self.conv_algorithm: str = "auto"
        self.max_shape_plans: int = 0
        self.max_shape_plan_bytes: int = 0
        self.specialize_after_runs: int = 0
        self.adapt_threads: bool = True
        self.deterministic: bool = False
        self.max_isa: str = ""
        self.precision: str = "fp32"
        self.inter_op_num_threads: int = 0
        self.execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level: int = -1  # -1: the default logger severity, as in onnxruntime
        self.log_verbosity_level: int = 0
        self.enable_cpu_mem_arena: bool = True
        self.enable_mem_pattern: bool = True
        self.enable_profiling: bool = False
        self.logid: str = ""
        self.profile_file_prefix: str = "onnxruntime_profile_"
        self.optimized_model_filepath: str = ""
        self.enable_mem_reuse: bool = True
        self.use_deterministic_compute: bool = False
        self.use_per_session_threads: bool = True
        self.execution_order: ExecutionOrder = ExecutionOrder.DEFAULT
        self._config: Dict[str, str] = {}
        self._initializers: List[tuple] = []
        self._dims_by_name: Dict[str, int] = {}
        self._dims_by_denotation: Dict[str, int] = {}
        self._external_files: Dict[str, Any] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Records an onnxruntime session config entry. onyx reads
        ``session.optimized_model_external_initializers_file_name`` and
        ``session.optimized_model_external_initializers_min_size_in_bytes``; others are kept
        for :meth:`get_session_config_entry` and otherwise ignored."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        """The value recorded for ``key``; RuntimeError when there is none (as onnxruntime)."""
        try:
            return self._config[key]
        except KeyError:
            raise RuntimeError(
                f"SessionOptions does not have configuration with key: {key}"
            ) from None

    def add_initializer(self, name: str, value: Any) -> None:
        """Replaces the model's initializer ``name`` (or gives a graph input of that name one)
        with ``value``, an :class:`onyx.OrtValue` or numpy array, for sessions made with these
        options. Keep the value alive while such sessions are being created."""
        self._initializers.append((str(name), _array_of(value)))

    def add_external_initializers(self, names: Sequence[str], values: Sequence[Any]) -> None:
        """:meth:`add_initializer` for each pair: typically initializers whose external data is
        not on disk."""
        if len(names) != len(values):
            from onyx import InvalidArgument  # noqa: PLC0415 (avoids an import cycle)

            raise InvalidArgument(
                f"add_external_initializers: {len(names)} names but {len(values)} values"
            )
        for name, value in zip(names, values):
            self.add_initializer(name, value)

    def add_external_initializers_from_files_in_memory(
        self, file_names: Sequence[str], buffers: Sequence[Any], lengths: Sequence[int]
    ) -> None:
        """Gives the contents of external-data files (as the initializers' ``location`` names
        them) from memory: ``buffers`` are bytes-like objects, ``lengths`` their sizes. Keep them
        alive while sessions are being created with these options."""
        if not len(file_names) == len(buffers) == len(lengths):
            from onyx import InvalidArgument  # noqa: PLC0415

            raise InvalidArgument(
                "add_external_initializers_from_files_in_memory: file_names, buffers and lengths "
                f"differ in length ({len(file_names)}, {len(buffers)}, {len(lengths)})"
            )
        for name, buffer, length in zip(file_names, buffers, lengths):
            view = memoryview(buffer).cast("B")
            if not 0 <= int(length) <= view.nbytes:
                from onyx import InvalidArgument  # noqa: PLC0415

                raise InvalidArgument(
                    f"external file '{name}': length {length} but the buffer holds "
                    f"{view.nbytes} bytes"
                )
            self._external_files[str(name)] = view[: int(length)]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fixes the graph inputs' symbolic dimension ``dim_name`` to ``dim_value``."""
        self._dims_by_name[str(dim_name)] = _dim_value(dim_value)

    def add_free_dimension_override_by_denotation(
        self, dim_denotation: str, dim_value: int
    ) -> None:
        """Fixes the graph inputs' dimensions denoted ``dim_denotation`` (e.g. ``DATA_BATCH``)."""
        self._dims_by_denotation[str(dim_denotation)] = _dim_value(dim_value)

    def register_custom_ops_library(self, library_path: str) -> None:
        """Not supported: onyx cannot load onnxruntime custom-operator libraries."""
        from onyx import Unsupported  # noqa: PLC0415 (avoids an import cycle)

        raise Unsupported(
            f"register_custom_ops_library({library_path!r}): onyx cannot load onnxruntime "
            "custom-operator libraries (they are built against onnxruntime's C API); models "
            "using such operators cannot run on onyx"
        )

    def __repr__(self) -> str:
        return (
            f"SessionOptions(intra_op_num_threads={self.intra_op_num_threads}, "
            f"graph_optimization_level={self.graph_optimization_level!r}, "
            f"reference_kernels={self.reference_kernels}, "
            f"conv_algorithm={self.conv_algorithm!r}, "
            f"max_shape_plans={self.max_shape_plans!r}, "
            f"max_shape_plan_bytes={self.max_shape_plan_bytes!r}, "
            f"specialize_after_runs={self.specialize_after_runs!r}, "
            f"adapt_threads={self.adapt_threads!r}, "
            f"deterministic={self.deterministic!r}, "
            f"max_isa={self.max_isa!r}, "
            f"precision={self.precision!r})"
        )


def _array_of(value: Any) -> Any:
    """The numpy array behind an OrtValue (or the value itself)."""
    numpy = getattr(value, "numpy", None)
    return numpy() if callable(numpy) else value


def _dim_value(value: int) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__") or value.__index__() < 0:
        from onyx import InvalidArgument  # noqa: PLC0415 (avoids an import cycle)

        raise InvalidArgument(f"a free dimension override must be an int >= 0, got {value!r}")
    return value.__index__()


def cache_limit(options: "SessionOptions", name: str) -> int:
    """``options.<name>`` checked as a count or size for the shape-plan cache: an int >= 0."""
    value = getattr(options, name, 0)
    # bool is an int in Python, but True as a plan count is surely a mistake.
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(
            f"SessionOptions.{name} must be an int >= 0 (0: environment variable or default), "
            f"got {type(value).__name__} {value!r}"
        )
    number = value.__index__()
    if number < 0 or number >= 2**63:
        from onyx import InvalidArgument  # noqa: PLC0415 (avoids an import cycle)

        raise InvalidArgument(
            f"SessionOptions.{name} must be an int >= 0 (0: environment variable or default), "
            f"got {number}"
        )
    return number


class RunOptions:
    """Options for one :meth:`InferenceSession.run` call, with onnxruntime's attribute names.

    Attributes onyx uses:
        terminate: set to True, from any thread, to stop every run using these options between
            operators and between Loop/Scan iterations; those runs raise :class:`onyx.Cancelled`
            and the session stays usable. As in onnxruntime the flag stays set until set back to
            False, and a run started while it is set fails at once.
        timeout_ms: onyx only; stop the run the same way once it has taken this many
            milliseconds (0, the default: no limit).

    Accepted and ignored: log_severity_level, log_verbosity_level, logid, run_tag,
    only_execute_path_to_fetches; and add_run_config_entry() records entries that
    get_run_config_entry() returns (onyx reads none of them).
    """

    __slots__ = (
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "run_tag",
        "only_execute_path_to_fetches",
        "timeout_ms",
        "_flag",
        "_config",
    )

    def __init__(self) -> None:
        from onyx._onyx import TerminateFlag  # noqa: PLC0415 (loaded by the package first)

        self.log_severity_level = -1  # -1: the default logger severity, as in onnxruntime
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.only_execute_path_to_fetches = False
        self.timeout_ms: int = 0
        # Shared with the engine while a run works without the GIL: one atomic flag per object.
        self._flag = TerminateFlag()
        self._config: Dict[str, str] = {}

    @property
    def terminate(self) -> bool:
        return self._flag.value

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._flag.value = bool(value)

    def add_run_config_entry(self, key: str, value: str) -> None:
        """Records an onnxruntime run config entry (onyx reads none of them)."""
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        """The value recorded for ``key``; RuntimeError when there is none (as onnxruntime)."""
        try:
            return self._config[key]
        except KeyError:
            raise RuntimeError(
                f"RunOptions does not have configuration with key: {key}"
            ) from None

    def __repr__(self) -> str:
        return f"RunOptions(terminate={self.terminate}, timeout_ms={self.timeout_ms})"
