"""Fixtures of the driver tests: the installed drivers and the clang they use."""

from __future__ import annotations

import shutil

import pytest

from enzyme_py.driver.clang import find_clang


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH: install EnzymePy first (pip install .)")
    return path


@pytest.fixture(scope="session")
def ecc() -> str:
    return _tool("enzyme-cc")


@pytest.fixture(scope="session")
def ecxx() -> str:
    return _tool("enzyme-c++")


@pytest.fixture(scope="session")
def clang():
    return find_clang()
