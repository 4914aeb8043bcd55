"""Fixtures for the generated operator tests; the machinery lives in opcheck.py (a uniquely named
module, so test files can import it even when several test directories run together)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import opcheck  # noqa: E402


@pytest.fixture
def check(request):
    """check(case): run `case` through onyx and its oracle and compare (see opcheck.run_case)."""
    return lambda case: opcheck.run_case(case, request)
