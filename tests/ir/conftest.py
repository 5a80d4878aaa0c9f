"""Fixtures for the IR tests: the corpus compiled by clang-22 to textual IR via llvmlite."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import subprocess
import sys

import pytest

try:
    from enzyme_py.ir import parse_module  # noqa: F401
except ImportError:
    # An editable install made before enzyme_py/ir existed maps only the files it
    # knew then; load the subpackage from the source tree instead.
    _init = pathlib.Path(__file__).resolve().parents[2] / "plugin/enzyme_py/ir/__init__.py"
    for _m in [m for m in sys.modules if m == "enzyme_py.ir" or m.startswith("enzyme_py.ir.")]:
        del sys.modules[_m]
    _spec = importlib.util.spec_from_file_location(
        "enzyme_py.ir", _init, submodule_search_locations=[str(_init.parent)])
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["enzyme_py.ir"] = _mod
    _spec.loader.exec_module(_mod)

from enzyme_py import llvm  # noqa: E402

CORPUS = pathlib.Path(__file__).parent / "corpus"
CLANG = shutil.which("clang-22") or shutil.which("clang")
SOURCES = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".c", ".cpp"))
CONFIGS = {"O0": ["-O0"], "O2g": ["-O2", "-g"], "O0g": ["-O0", "-g"]}


@pytest.fixture(scope="session")
def compile_ir(tmp_path_factory):
    """``compile_ir(source_name, config) -> str``: clang bitcode printed by llvmlite."""
    if CLANG is None:
        pytest.skip("clang-22 not found")
    out = tmp_path_factory.mktemp("ir")
    cache: dict = {}

    def get(src: str, config: str) -> str:
        key = (src, config)
        if key not in cache:
            bc = out / f"{src}.{config}.bc"
            cmd = [CLANG, "-c", "-emit-llvm", *CONFIGS[config], str(CORPUS / src), "-o", str(bc)]
            if src.endswith(".cpp"):
                cmd.insert(1, "-std=c++17")
            subprocess.run(cmd, check=True, capture_output=True)
            cache[key] = llvm.to_text(llvm.parse_bitcode(bc.read_bytes()))
        return cache[key]

    return get
