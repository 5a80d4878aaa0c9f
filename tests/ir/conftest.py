"""Fixtures for the IR tests: the corpus compiled by EnzymePy's clang to textual IR via
llvmlite."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from enzyme_py import llvm
from enzyme_py.driver.clang import find_clang

CORPUS = pathlib.Path(__file__).parent / "corpus"
SOURCES = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".c", ".cpp"))
CONFIGS = {"O0": ["-O0"], "O2g": ["-O2", "-g"], "O0g": ["-O0", "-g"]}


@pytest.fixture(scope="session")
def compile_ir(tmp_path_factory):
    """``compile_ir(source_name, config) -> str``: clang bitcode printed by llvmlite."""
    clang = find_clang()
    out = tmp_path_factory.mktemp("ir")
    cache: dict = {}

    def get(src: str, config: str) -> str:
        key = (src, config)
        if key not in cache:
            bc = out / f"{src}.{config}.bc"
            cxx = src.endswith(".cpp")
            cmd = clang.command(cxx) + (["-std=c++17"] if cxx else []) + [
                "-c", "-emit-llvm", *CONFIGS[config], str(CORPUS / src), "-o", str(bc)]
            subprocess.run(cmd, check=True, capture_output=True)
            cache[key] = llvm.to_text(llvm.parse_bitcode(bc.read_bytes()))
        return cache[key]

    return get
