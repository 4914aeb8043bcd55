"""Generated operator tests (a package so its conftest does not shadow tests/python/conftest.py)."""
