"""Shared set-up for the Python-interface tests: every test's compile cache lives in a
temporary directory (never the user's ~/.cache), and optional packages are skipped
with the reason, except under CI (CI=true), where a missing package fails."""

import importlib
import os

import pytest


def need(module: str, extra: str):
    """Import ``module`` or skip (fail under CI) naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        msg = f"{module} is not installed ({e}); pip install '.[{extra}]'"
        if os.environ.get("CI"):
            pytest.fail("CI must install the Python-interface extras: " + msg, pytrace=False)
        pytest.skip(msg, allow_module_level=True)


@pytest.fixture(scope="session", autouse=True)
def _enzyme_py_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENZYME_PY_CACHE_DIR", str(tmp_path_factory.mktemp("enzyme_py_cache")))
        yield
