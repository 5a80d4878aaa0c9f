"""The benchmark kernels compute what they claim (primal vs a pure-Python reference on
tiny inputs), and the harness's --quick preset runs end to end on one kernel.

These are correctness checks of the benchmark code, not timings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_reference as reference  # noqa: E402
from benchmarks.dumpfile import read_inputs  # noqa: E402

KERNELS = ROOT / "benchmarks" / "kernels"

TINY = {
    "gmm": (3, 4, 20),
    "ba": (3, 10, 30),
    "lstm": (2, 6),
    "gmm_adbench": (3, 4, 20),
    "ba_adbench": (3, 10, 30),
    "lstm_adbench": (2, 6),
    "heat1d": (30, 10),
    "heat2d": (8, 5),
    "rk4": (8, 20),
    "scan": (50,),
    "spmv": (40, 4, 3),
}

needs_cc = pytest.mark.skipif(shutil.which("enzyme-cc") is None, reason="enzyme-cc not on PATH")


def _stub_build(kernel: str, tmp: Path) -> Path:
    """Build the kernel's primal with the enzyme-cc driver but without differentiating
    (a stub __enzyme_autodiff), so the primal check does not depend on the AD pass."""
    stub = tmp / "stub.c"
    stub.write_text("int enzyme_dup, enzyme_const, enzyme_dupnoneed, enzyme_out;\n"
                    "void __enzyme_autodiff_stub(void *f, ...) {}\n")
    exe = tmp / kernel
    subprocess.run(["enzyme-cc", "-O1", "-D__enzyme_autodiff=__enzyme_autodiff_stub",
                    str(KERNELS / f"{kernel}.c"), str(stub), "-o", str(exe), "-lm"],
                   check=True, capture_output=True, text=True)
    return exe


@needs_cc
@pytest.mark.parametrize("kernel", sorted(TINY))
def test_primal_matches_reference(kernel, tmp_path):
    exe = _stub_build(kernel, tmp_path)
    p = subprocess.run([str(exe), "--reps", "1", "--min-time", "0", "--fd-samples", "0",
                        "--no-grad", "--dump", str(tmp_path), *map(str, TINY[kernel])],
                       check=True, capture_output=True, text=True)
    got = json.loads(p.stdout)["value"]
    header, arrays = read_inputs(tmp_path / "inputs.bin")
    want = getattr(reference, kernel)(header["sizes"], arrays)
    assert got == pytest.approx(want, rel=1e-10, abs=1e-12)


@needs_cc
def test_quick_harness_one_kernel(tmp_path):
    peers = ["fd"]
    if Path("/usr/include/adolc/adolc.h").exists() and shutil.which("g++"):
        peers.append("adolc")
    p = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--kernels", "scan",
                        "--peers", ",".join(peers), "--no-png", "--out", str(tmp_path / "out"),
                        "--build-dir", str(tmp_path / "build"), "--reps", "1",
                        "--min-time", "0.001"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "out" / "quick.json").read_text())
    (case,) = data["results"]
    tools = case["tools"]
    assert tools["enzyme"].get("ok"), tools["enzyme"].get("error")
    assert tools["enzyme"]["grad_s"] > 0 and tools["enzyme"]["primal_s"] > 0
    assert tools["fd"]["agree"] < 1e-4
    if "adolc" in peers:
        assert tools["adolc"]["agree"] < 1e-6
    md = (tmp_path / "out" / "quick.md").read_text()
    assert "| scan |" in md


def test_compile_time_benchmark_without_the_drivers_says_so(tmp_path):
    """Without enzyme-cc on PATH the compile-time benchmark stops with a message and
    exit status 2 (it printed a traceback)."""
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "benchmarks.compile_time", "--only", "regex"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "not on PATH" in r.stderr and "Traceback" not in r.stderr, r.stderr
