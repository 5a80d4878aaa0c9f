"""Round trip of real clang output through our IR, end to end (issue 2, "How it is checked").

For every program in ``tests/corpus`` at -O0 and -O2:

    clang -c -emit-llvm -flto=full  ->  bitcode  ->  llvmlite text
      -> enzyme_py.ir.parse_module (every body forced)  ->  print_module (stable)
      -> llvmlite parse + verify  ->  optimize at the program's level  ->  native object
      -> link with the clang driver  ->  run

and the run must print the same stdout and exit with the same status as the same
program built by plain clang at the same level.  Programs whose first lines carry
``corpus-flags: -g`` are compiled with debug info, so DI metadata, ``#dbg_*`` records
and ``!dbg`` attachments go through the round trip too.

The reference executable is built (one clang call) in the background while this
process does the round trip, so the two cores are both busy.

Speed of parse+print on the largest module: ``python tests/test_corpus_roundtrip.py``.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import time

import pytest

from enzyme_py import llvm
from enzyme_py.driver import structors
from enzyme_py.driver.clang import find_clang
from enzyme_py.ir import parse_module, print_module

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
PROGRAMS = sorted(p.name for p in CORPUS.iterdir() if p.suffix in (".c", ".cpp"))
LEVELS = [0, 2]
RUN_TIMEOUT = 20

_FLAGS_RE = re.compile(r"corpus-flags:\s*([^*\n]*)")


def _extra_flags(src: pathlib.Path) -> list[str]:
    """Extra compile flags from a ``corpus-flags:`` comment in the first lines."""
    head = src.read_text().split("\n", 3)[:3]
    for line in head:
        m = _FLAGS_RE.search(line)
        if m:
            return m.group(1).split()
    return []


def _compile_flags(src: pathlib.Path, level: int) -> tuple[list[str], bool]:
    cxx = src.suffix == ".cpp"
    std = "-std=c++17" if cxx else "-std=c11"
    return [std, f"-O{level}", *_extra_flags(src)], cxx


def _run(exe: pathlib.Path) -> tuple[int, str]:
    p = subprocess.run([str(exe)], capture_output=True, stdin=subprocess.DEVNULL,
                       timeout=RUN_TIMEOUT)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def round_trip_text(text: str, what: str) -> str:
    """Parse with our parser (every body forced), print, check the printing is stable."""
    mod = parse_module(text)
    for f in mod.functions:
        f.blocks  # noqa: B018 -- forces the lazy body to be parsed
    assert all(f.is_materialized for f in mod.functions), what
    out = print_module(mod)
    assert print_module(mod) == out, f"{what}: printing the same module twice differs"
    again = parse_module(out)
    for f in again.functions:
        f.blocks  # noqa: B018
    assert print_module(again) == out, f"{what}: print(parse(print(m))) != print(m)"
    return out


def bitcode_text(clang, src: pathlib.Path, level: int, bc: pathlib.Path) -> str:
    flags, cxx = _compile_flags(src, level)
    cmd = clang.command(cxx) + ["-c", "-emit-llvm", "-flto=full", *flags, str(src), "-o", str(bc)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout}"
    return llvm.to_text(llvm.parse_bitcode(bc.read_bytes(), str(bc)))


@pytest.fixture(scope="module")
def clang():
    return find_clang()


@pytest.mark.parametrize("level", LEVELS, ids=[f"O{lv}" for lv in LEVELS])
@pytest.mark.parametrize("name", PROGRAMS)
def test_corpus_roundtrip(clang, tmp_path, name, level):
    src = CORPUS / name
    flags, cxx = _compile_flags(src, level)
    libs = ["-lm"]

    # Reference: plain clang, one call, built while we do the round trip.
    ref_exe = tmp_path / "ref"
    ref_cmd = clang.command(cxx) + [*flags, str(src), "-o", str(ref_exe), *libs]
    ref = subprocess.Popen(ref_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        text = bitcode_text(clang, src, level, tmp_path / "prog.bc")
        out = round_trip_text(text, f"{name} -O{level}")
        mod = llvm.parse_assembly(out, f"{name} -O{level} (printed by enzyme_py.ir)")
        llvm.optimize(mod, llvm.PipelineOptions(level=level))
        mod = structors.lower_module(mod)  # as enzyme-cc does: lld ignores .ctors
        obj = tmp_path / "prog.o"
        obj.write_bytes(llvm.emit_object(mod, level=level))
        exe = tmp_path / "rt"
        link = clang.command(cxx) + [str(obj), "-o", str(exe), *libs]
        p = subprocess.run(link, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert p.returncode == 0, f"link failed: {' '.join(link)}\n{p.stdout}"
    finally:
        ref_out, _ = ref.communicate()
    assert ref.returncode == 0, f"reference build failed: {' '.join(ref_cmd)}\n{ref_out}"

    want = _run(ref_exe)
    got = _run(exe)
    assert want[1], f"{name}: the reference printed nothing"
    assert got[1] == want[1], f"{name} -O{level}: stdout differs from clang's build"
    assert got[0] == want[0], f"{name} -O{level}: exit status {got[0]} != clang's {want[0]}"


def test_corpus_size():
    c = [p for p in PROGRAMS if p.endswith(".c")]
    cpp = [p for p in PROGRAMS if p.endswith(".cpp")]
    assert len(PROGRAMS) >= 40 and len(c) >= 15 and len(cpp) >= 15


def _time_parse_print(text: str) -> tuple[float, float, int, int]:
    """Best of 3: (parse with every body forced, print) seconds, functions, instructions."""
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        mod = parse_module(text)
        n = sum(len(b.instructions) for f in mod.functions for b in f.blocks)
        t1 = time.perf_counter()
        print_module(mod)
        t2 = time.perf_counter()
        if best is None or t2 - t0 < sum(best[:2]):
            best = (t1 - t0, t2 - t1, len(mod.functions), n)
    return best


def speed_report(level: int = 0) -> None:  # pragma: no cover - a measurement, run by hand
    """Parse (all bodies forced) + print speed on the largest corpus modules at -O<level>:
    the largest by lines and the largest by instruction count."""
    import tempfile

    cl = find_clang()
    with tempfile.TemporaryDirectory() as d:
        texts = {name: bitcode_text(cl, CORPUS / name, level, pathlib.Path(d) / "m.bc")
                 for name in PROGRAMS}
    by_lines = max(texts, key=lambda k: texts[k].count("\n"))
    by_insts = max(texts, key=lambda k: sum(1 for ln in texts[k].split("\n")
                                            if ln.startswith("  ") and not ln.startswith("    ")))
    for tag, name in (("largest by lines", by_lines), ("largest by instructions", by_insts)):
        text = texts[name]
        lines = text.count("\n")
        md = sum(1 for ln in text.split("\n") if ln.startswith("!"))
        tp, tpr, nfun, ninst = _time_parse_print(text)
        tot = tp + tpr
        print(f"{tag}: {name} -O{level}: {lines} lines ({md} metadata), {len(text)} bytes, "
              f"{nfun} functions, {ninst} instructions")
        print(f"  parse (bodies forced) {tp:.3f}s = {lines / tp:,.0f} lines/s, "
              f"{ninst / tp:,.0f} instructions/s; print {tpr:.3f}s = {lines / tpr:,.0f} lines/s; "
              f"parse+print {tot:.3f}s = {lines / tot:,.0f} lines/s")


if __name__ == "__main__":  # pragma: no cover
    speed_report(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
