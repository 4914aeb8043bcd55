"""Type stub of the native module onyx._onyx (python/onyx_module.cc). Use the `onyx` package."""
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

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
    ) -> List[Any]: ...
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
    def model_name(self) -> str: ...
    @property
    def ir_version(self) -> int: ...
    @property
    def opsets(self) -> Dict[str, int]: ...
