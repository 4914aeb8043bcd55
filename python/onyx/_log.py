"""onyx's log records and onnxruntime's logger settings (set_default_logger_severity,
set_default_logger_callback).

onyx reports errors by raising, so it logs little: a session's creation (severity 1, info) and
its options (0, verbose). Records go only to a callback installed with
:func:`set_default_logger_callback`; without one nothing is printed.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

VERBOSE, INFO, WARNING, ERROR, FATAL = range(5)

_severity = WARNING
_verbosity = 0
_callback: Optional[Callable[[int, str, str, str, str], Any]] = None


def _check_severity(severity: Any) -> int:
    valid = not isinstance(severity, bool) and hasattr(severity, "__index__")
    if not valid or not 0 <= severity.__index__() <= 4:
        # RuntimeError, as onnxruntime raises for these.
        raise RuntimeError(
            f"invalid logging severity {severity!r}: 0 (verbose), 1 (info), 2 (warning), "
            "3 (error) or 4 (fatal)"
        )
    return severity.__index__()


def set_default_logger_severity(severity: int) -> None:
    """Records below this severity are dropped (0 verbose ... 4 fatal; default 2, warning)."""
    global _severity
    _severity = _check_severity(severity)


def set_default_logger_verbosity(verbosity: int) -> None:
    """Accepted for onnxruntime compatibility: onyx has no verbosity levels within verbose."""
    global _verbosity
    valid = not isinstance(verbosity, bool) and hasattr(verbosity, "__index__")
    if not valid or verbosity.__index__() < 0:
        raise RuntimeError(f"logger verbosity must be an int >= 0, got {verbosity!r}")
    _verbosity = verbosity.__index__()


def set_default_logger_callback(callback: Optional[Callable[[int, str, str, str, str], Any]],
                                severity: int = WARNING) -> None:
    """Sends onyx's log records to ``callback(severity, category, logid, code_location, message)``
    and sets the default severity; ``None`` removes the callback (the severity is then only
    checked). An exception the callback raises is reported on stderr and otherwise ignored."""
    global _callback, _severity
    level = _check_severity(severity)
    if callback is None:
        _callback = None
        return
    if not callable(callback):
        raise RuntimeError(f"callback must be a callable, got {type(callback).__name__}")
    _callback = callback
    _severity = level


def enabled(severity: int) -> bool:
    """True when a record of this severity would reach a callback (callers skip formatting)."""
    return _callback is not None and severity >= _severity


def emit(severity: int, message: str, logid: str = "", code_location: str = "") -> None:
    callback = _callback
    if callback is None or severity < _severity:
        return
    try:
        callback(severity, "onyx", logid, code_location, message)
    except Exception as e:  # noqa: BLE001 (a logging callback must not break inference)
        print(f"onyx: the logging callback raised {type(e).__name__}: {e}", file=sys.stderr)
