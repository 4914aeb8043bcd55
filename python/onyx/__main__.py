"""``python -m onyx ARGS`` (and the ``onyx`` command a pip install adds) runs the onyx CLI:
``run``, ``plan``, ``info``, ``bench``, ``conformance``, ``ops``. ``python -m onyx --help`` lists them.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import List, Optional


def cli_path() -> str:
    """The onyx executable: inside the installed package (onyx/bin/onyx), or in a build tree
    (<build>/python/onyx -> <build>/onyx)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "bin", "onyx"), os.path.join(here, "..", "..", "onyx")]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    raise FileNotFoundError(f"the onyx command-line tool is missing; looked for {candidates}")


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the CLI with `argv` (default: this process's arguments) and returns its exit code.
    Without `argv` the CLI replaces this process, so signals, stdin and the exit code pass
    straight through."""
    path = cli_path()
    if argv is None and os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(path, ["onyx", *sys.argv[1:]])
    return subprocess.call([path, *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
