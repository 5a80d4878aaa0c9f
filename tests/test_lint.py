"""ruff over the package, the tests and the benchmarks (configured in pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    try:
        proc = subprocess.run(cmd + ["check", "plugin", "tests", "benchmarks"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        pytest.fail("ruff is not installed: pip install '.[test]'")
    assert proc.returncode == 0, proc.stdout + proc.stderr
