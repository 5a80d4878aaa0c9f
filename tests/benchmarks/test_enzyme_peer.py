"""Real Enzyme as a benchmark peer (benchmarks/enzyme_peer.py) and the heap counter
(benchmarks/memcount.c).

The pipeline's command lines are checked without the plugin; the end-to-end test runs
only where the plugin has already been set up (``python -m benchmarks.enzyme_peer``):
tests never download it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import enzyme_peer  # noqa: E402

FAKE = enzyme_peer.Plugin(Path("/p/LLVMEnzyme-15.so"),
                          {t: f"/bin/{t}" for t in enzyme_peer.TOOLS})


def test_pipeline_is_the_clang_plugins():
    cmds = enzyme_peer.build_commands(FAKE, [Path("a.c"), Path("b.c")], Path("/w/k"), "-O3",
                                      cflags=["-DX"], libs=["-lm"],
                                      enzyme_flags=["-enzyme-globals-default-inactive=1"])
    tools = [Path(c[0]).name for c in cmds]
    assert tools == ["clang-15", "clang-15", "llvm-link-15", "opt-15", "opt-15", "opt-15",
                     "llc-15", "clang-15"]
    fe = cmds[0]
    # frontend at the -O level, no LLVM passes: the IR the plugin's pipeline starts from
    assert fe[:7] == ["/bin/clang-15", "-c", "-emit-llvm", "-O3", "-Xclang",
                      "-disable-llvm-passes", "-DX"]
    assert cmds[2][1:3] == ["/w/k.e15.0.bc", "/w/k.e15.1.bc"]
    pre, ad, post = cmds[3], cmds[4], cmds[5]
    assert "-passes=preserve-nvvm,default<O3>" in pre
    for off in ("-vectorize-loops=false", "-vectorize-slp=false", "-disable-loop-unrolling"):
        assert off in pre and off not in post
    assert "-load-pass-plugin=/p/LLVMEnzyme-15.so" in pre
    assert ad[1:4] == ["-load-pass-plugin=/p/LLVMEnzyme-15.so", "-passes=preserve-nvvm,enzyme",
                       "-enzyme-globals-default-inactive=1"]
    assert ad[-3:] == ["/w/k.e15.pre.bc", "-o", "/w/k.e15.ad.bc"]
    assert post[1] == "-passes=default<O3>" and not any("plugin" in a for a in post)
    assert cmds[6][1] == "-O3" and "-relocation-model=pic" in cmds[6]
    assert cmds[7] == ["/bin/clang-15", "/w/k.e15.o", "-o", "/w/k", "-lm"]


def test_o0_frontend_is_enzymes_test_form():
    (fe, *_) = enzyme_peer.build_commands(FAKE, [Path("a.c")], Path("k"), frontend="O0")
    assert fe[3:6] == ["-O0", "-Xclang", "-disable-O0-optnone"]


def test_missing_llvm15_is_a_skip_with_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(enzyme_peer.shutil, "which", lambda name: None)
    monkeypatch.setattr(enzyme_peer.Path, "exists", lambda self: False)
    r = enzyme_peer.setup(tmp_path)
    assert isinstance(r, enzyme_peer.Skip)
    assert "clang-15 not found" in r.reason


MEM_PROG = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    void (*begin)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "benchmem_begin");
    long long (*end)(void) = (long long (*)(void))dlsym(RTLD_DEFAULT, "benchmem_end");
    if (!begin || !end) { printf("none\n"); return 0; }
    void *keep = malloc(5000);
    begin();
    char *a = malloc(100000), *b = calloc(1, 30000);
    a = realloc(a, 200000);
    free(b);
    char *c = malloc(10000);
    free(a);
    free(c);
    free(keep);
    printf("%lld\n", end());
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_heap_counter_peak(tmp_path):
    so = tmp_path / "libbenchmem.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(ROOT / "benchmarks" / "memcount.c"),
                    "-o", str(so)], check=True)
    (tmp_path / "m.c").write_text(MEM_PROG)
    subprocess.run(["cc", "-O0", str(tmp_path / "m.c"), "-o", str(tmp_path / "m")], check=True)
    plain = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True)
    assert plain.stdout.strip() == "none"
    p = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True,
                       env={"LD_PRELOAD": str(so), "PATH": "/usr/bin:/bin"})
    peak = int(p.stdout)
    # a (200000 after realloc) and b (30000) live together; malloc_usable_size rounds up
    assert 230000 <= peak < 230000 + 4096


plugin_ready = (enzyme_peer.cache_dir() / "LLVMEnzyme-15.so").exists()


@pytest.mark.skipif(not plugin_ready or shutil.which("enzyme-cc") is None,
                    reason="real Enzyme not set up (python -m benchmarks.enzyme_peer) "
                           "or enzyme-cc not on PATH")
def test_harness_with_real_enzyme(tmp_path):
    p = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--kernels",
                        "gmm_adbench,ba_adbench", "--peers", "enzyme15,fd", "--no-png",
                        "--no-ablation", "--out", str(tmp_path / "out"),
                        "--build-dir", str(tmp_path / "build"), "--reps", "1",
                        "--min-time", "0.001"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "out" / "quick.json").read_text())
    assert data["meta"]["enzyme15"].startswith("Enzyme LLVM 15 plugin")
    for case in data["results"]:
        z, e = case["tools"]["enzyme15"], case["tools"]["enzyme"]
        assert z.get("ok"), z
        assert z["agree"] < 1e-6 and 0 <= z["fd_max_rel_err"] < 1e-4
        assert z["grad_s"] > 0 and z["grad_heap_peak"] >= 0 and e["grad_heap_peak"] >= 0
    md = (tmp_path / "out" / "quick.md").read_text()
    assert "| gmm_adbench |" in md and "EnzymePy ÷ Enzyme" in md
