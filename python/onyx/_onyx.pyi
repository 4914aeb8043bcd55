"""Type stub of the native module onyx._onyx (python/onyx_module.cc). Use the `onyx` package."""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

class Error(Exception):
    """Base class of every error the onyx engine raises; str(e) is the engine's message."""

class InvalidArgument(Error, ValueError):
    """A bad feed (unknown name, wrong dtype, rank or dimension), option or output name."""

class InvalidModel(Error, ValueError):
    """The model is not valid ONNX (unparsable bytes, broken graph, bad attribute)."""

class Unsupported(Error, NotImplementedError):
    """Valid ONNX that onyx cannot run (an operator, opset or type it lacks)."""

class NotFound(Error, FileNotFoundError):
    """A model or external-data file that does not exist."""

class FileError(Error, OSError):
    """Reading or mapping a file failed."""

class ExecutionError(Error, RuntimeError):
    """A kernel failed on the values it was given while the model ran."""

class LimitExceeded(Error, MemoryError):
    """A size or count over a configured ceiling (tensor bytes, arena bytes, nodes, nesting)."""

class Cancelled(Error, RuntimeError):
    """A run stopped by RunOptions.terminate or RunOptions.timeout_ms."""

class TerminateFlag:
    """A flag that stops runs given it (onyx.RunOptions.terminate)."""

    value: bool
    def __init__(self) -> None: ...

class Session:
    """A loaded and planned ONNX model (native)."""

    def __init__(
        self,
        model: Union[str, bytes, bytearray],
        intra_op_threads: int = 0,
        optimization: str = "all",
        reference_kernels: bool = False,
        conv_algorithm: str = "auto",
        max_shape_plans: int = 0,
        max_shape_plan_bytes: int = 0,
        specialize_after_runs: int = 0,
        adapt_threads: bool = True,
        precision: str = "fp32",
        initializers: Optional[Sequence[Any]] = None,
        dims_by_name: Mapping[str, int] = ...,
        dims_by_denotation: Mapping[str, int] = ...,
        external_files: Optional[Mapping[str, Any]] = None,
        deterministic: bool = False,
    ) -> None: ...
    def inputs(self) -> List[Dict[str, Any]]:
        """Every graph input: {'name', 'type', 'shape', 'onyx_type'} (initializer-backed included)."""
    def outputs(self) -> List[Dict[str, Any]]: ...
    def required_inputs(self) -> List[str]: ...
    def run(
        self,
        feeds: Mapping[str, Any],
        output_names: Optional[Sequence[str]] = None,
        terminate: Optional[TerminateFlag] = None,
        timeout_ms: int = 0,
        profile: Optional[List[Any]] = None,
        output_buffers: Optional[Mapping[str, Any]] = None,
    ) -> List[Any]:
        """`profile` (a list) receives one tuple per kernel step: (node, op_type, domain, impl,
        start ns on the monotonic clock, duration ns, thread id, subgraph depth, fused nodes,
        output shapes). `output_buffers` ({name: writable array}): outputs written in place
        where the engine can (same type and shape, 64-byte aligned); those are returned as the
        arrays themselves."""
    def shape_plan_stats(self) -> Dict[str, int]:
        """plans, plan_bytes, builds, hits, evictions, generic_runs, packed_weight_bytes,
        shared_constant_bytes, free_arena_bytes, max_shape_plans, max_shape_plan_bytes,
        specialize_after_runs."""
    def runs_by_threads(self) -> Dict[int, int]:
        """Runs so far by the thread count they ran at."""
    @property
    def intra_op_threads(self) -> int: ...
    @property
    def deterministic(self) -> bool: ...
    @property
    def deterministic_mode(self) -> bool: ...
    @property
    def model_name(self) -> str: ...
    @property
    def ir_version(self) -> int: ...
    @property
    def opsets(self) -> Dict[str, int]: ...

# onnxruntime's exception classes by name (Fail, InvalidArgument, NoSuchFile, ...); the classes
# above derive from the matching ones. onyx.capi.onnxruntime_pybind11_state exports them.
ort_exceptions: Dict[str, type]

def model_metadata(model: Union[str, bytes]) -> Dict[str, Any]:
    """producer_name, graph_name, domain, description, graph_description, version,
    custom_metadata_map (and producer_version) of a model file or serialized model."""

def save_model(model: Union[str, bytes], dest: str, external_data_file: str = "",
               external_min_bytes: int = 1024) -> None:
    """Writes a copy of the model to `dest`, initializers inline or (those of at least
    external_min_bytes) in `external_data_file` next to `dest`."""

def prune(model: str, output: str, method: str = "relative", sparsity: float = 0.5,
          layers: str = "all", block: int = 1, sparse_initializers: bool = False) -> Dict[str, Any]:
    """Prunes a model file's weights into `output` (docs/sparsity.md); returns the report."""

def check(model: Union[str, bytes], inputs: Dict[str, Any], threads: int = 0,
          optimization: str = "all", conv_algorithm: str = "auto") -> Tuple[str, str]:
    """onyx check on a model and its feeds: (the report as JSON, the report as a table)."""
