"""The link-time pipeline: bitcode in, native object out.

    bitcode modules ─ llvmlite link ─► merged module
        ─ EnzymePy IR parse ─► AD pass ─► print ─ llvmlite parse + verify
        ─► -O pipeline ─► native object

Function bodies are parsed lazily: the AD pass parses those its call sites reach
(``-v`` counts them); the rest is printed back verbatim.  Each stage is timed
(``-v`` prints the times) and, with ``-save-temps``, the
merged and the transformed IR are written next to the output.

The last two steps (the -O pipeline and code generation) are LLVM's either way; they
run in the clang that compiled the sources when its LLVM major is llvmlite's
(``PipelineConfig.backend``), else in llvmlite.  The same passes, but llvmlite's LLVM
is built with assertions, which costs it about twice a release build's time there:
``python -m benchmarks.compile_time`` spends most of its time in those two steps.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from .. import llvm
from . import structors
from ..errors import FileError, InternalError


@dataclass
class PipelineConfig:
    level: int = 2
    cpu: str = ""
    features: str = ""
    enzyme: dict[str, str] = field(default_factory=dict)
    verbose: bool = False
    save_prefix: str | None = None   # write <prefix>.merged.ll and <prefix>.enzyme.ll
    # a clang command (with the flags that make it plain clang) to run the final -O
    # pipeline and code generation on our bitcode; empty: llvmlite runs them.  Only a
    # clang whose LLVM major is llvmlite's reads the bitcode llvmlite writes.
    backend: tuple[str, ...] = ()
    size: int = 0   # -Os (1) / -Oz (2): clang runs those pipelines, llvmlite runs -O2


def _log(cfg: PipelineConfig, text: str) -> None:
    if cfg.verbose:
        import sys
        print(f"enzyme-cc: {text}", file=sys.stderr, flush=True)


def _save(cfg: PipelineConfig, suffix: str, text: str) -> None:
    if cfg.save_prefix:
        path = f"{cfg.save_prefix}.{suffix}"
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(path)   # no half-written file left behind
            raise FileError.of("cannot write", path, e) from None
        _log(cfg, f"saved {path}")


def transform_text(text: str, cfg: PipelineConfig) -> str:
    """Our own part of the pipeline: parse the merged IR into EnzymePy's IR,
    run the AD pass, print it back."""
    from ..ad import transform_module
    from ..ir import parse_module, print_module
    from ..ir import body_parser

    t0 = time.perf_counter()
    parsed = body_parser.BODIES_PARSED
    module = parse_module(text)
    defined = sum(1 for f in module.functions if not f.is_declaration)
    t1 = time.perf_counter()
    transform_module(module, cfg.enzyme, log=lambda s: _log(cfg, s))
    t2 = time.perf_counter()
    out = print_module(module)
    t3 = time.perf_counter()
    _log(cfg, f"IR parse {t1 - t0:.3f}s, AD pass {t2 - t1:.3f}s, print {t3 - t2:.3f}s")
    # only the functions the call sites reach are parsed; the rest is printed verbatim
    _log(cfg, f"function bodies parsed: {body_parser.BODIES_PARSED - parsed} "
              f"(the linked module defines {defined} functions)")
    return out


def _mentions_enzyme(mod) -> bool:
    """Whether any function or global of ``mod`` is an ``__enzyme_*`` entry point, type
    hint or registration (possibly as part of a C++ mangled name)."""
    return any("__enzyme_" in g.name for g in list(mod.functions) + list(mod.global_variables))


def build_object(bitcodes: list[tuple[str, bytes]], cfg: PipelineConfig) -> bytes:
    """Link the bitcode modules, run our pipeline on the result and return a
    native object."""
    return _build(bitcodes, cfg, "codegen", lambda mod: llvm.emit_object(
        structors.lower_module(mod), level=cfg.level, cpu=cfg.cpu, features=cfg.features),
        native="-c")


def build_output(bitcodes: list[tuple[str, bytes]], cfg: PipelineConfig, kind: str) -> bytes:
    """``-S`` / ``-emit-llvm`` of one unit: its differentiated and optimised module as
    assembly (``kind`` "s"), IR text ("ll") or bitcode ("bc")."""
    if kind == "s":
        return _build(bitcodes, cfg, "codegen", lambda mod: llvm.emit_assembly(
            structors.lower_module(mod), level=cfg.level, cpu=cfg.cpu,
            features=cfg.features).encode(), native="-S")
    if kind == "ll":
        return _build(bitcodes, cfg, "output", lambda mod: llvm.to_text(mod).encode())
    return _build(bitcodes, cfg, "output", llvm.to_bitcode)


def _build(bitcodes: list[tuple[str, bytes]], cfg: PipelineConfig, last: str, finish,
           native: str = "") -> bytes:
    """Link, differentiate, optimise, then ``finish(module)`` (the stage ``-v`` calls
    ``last``).  ``native``: the clang flag (``-c``, ``-S``) that has ``cfg.backend``
    do the optimisation and ``finish`` instead."""
    t0 = time.perf_counter()
    context = llvm.new_context()  # linked modules must share one
    modules = [llvm.parse_bitcode(data, what, context) for what, data in bitcodes]
    merged = llvm.link(modules)
    _log(cfg, f"llvmlite link of {len(bitcodes)} module(s): "
              + ", ".join(what for what, _ in bitcodes))
    if _mentions_enzyme(merged):
        text = llvm.to_text(merged)
        _save(cfg, "merged.ll", text)
        t1 = time.perf_counter()
        out = transform_text(text, cfg)
        _save(cfg, "enzyme.ll", out)
        t2 = time.perf_counter()
        try:
            mod = llvm.parse_assembly(out, "the transformed module")
        except llvm.LLVMError as e:
            raise InternalError(str(e), hint="rerun with -save-temps and attach the "
                                             "<output>.merged.ll and <output>.enzyme.ll it "
                                             "writes to the report") from None
    else:
        # nothing to differentiate: the linked module goes on as it is, without the
        # round trip through text
        from ..ad import check_options
        check_options(cfg.enzyme)
        if cfg.save_prefix:
            text = llvm.to_text(merged)
            _save(cfg, "merged.ll", text)
            _save(cfg, "enzyme.ll", text)
        t1 = t2 = time.perf_counter()
        _log(cfg, "no __enzyme_* function or global: the AD pass has nothing to do")
        mod = merged
    if native and cfg.backend:
        out = _clang_finish(mod, cfg, native)
        if out is not None:
            t3 = time.perf_counter()
            _log(cfg, f"link+print {t1 - t0:.3f}s, EnzymePy {t2 - t1:.3f}s, "
                      f"clang {_opt_flag(cfg)} and {last} {t3 - t2:.3f}s")
            return out
    opts = llvm.PipelineOptions(level=cfg.level)
    llvm.optimize(mod, opts)
    t3 = time.perf_counter()
    out = finish(mod)
    t4 = time.perf_counter()
    _log(cfg, f"link+print {t1 - t0:.3f}s, EnzymePy {t2 - t1:.3f}s, "
              f"llvmlite -O{cfg.level} {t3 - t2:.3f}s, {last} {t4 - t3:.3f}s")
    return out


def _opt_flag(cfg: PipelineConfig) -> str:
    return {1: "-Os", 2: "-Oz"}.get(cfg.size, f"-O{cfg.level}")


def _clang_finish(mod, cfg: PipelineConfig, flag: str) -> bytes | None:
    """The -O pipeline and code generation of ``mod`` by ``cfg.backend`` (``flag``:
    ``-c`` for an object, ``-S`` for assembly); None, after saying why under ``-v``,
    where that clang fails (llvmlite then does both)."""
    with tempfile.TemporaryDirectory(prefix="enzyme-cc-") as tmp:
        src, out = os.path.join(tmp, "final.bc"), os.path.join(tmp, "final.out")
        with open(src, "wb") as fh:
            fh.write(llvm.to_bitcode(mod))
        # as llvmlite's TargetMachine would: position-independent code, the
        # -march=native CPU when asked for, the SLP vectorizer's bound (llvm.py)
        cmd = [*cfg.backend, _opt_flag(cfg), "-fPIC", "-Wno-override-module",
               "-mllvm", f"-slp-schedule-budget={llvm.SLP_SCHEDULE_BUDGET}"]
        if cfg.cpu == "host":
            cmd.append("-march=native")
        cmd += [flag, src, "-o", out]
        _log(cfg, shlex.join(cmd))   # as the driver shows the commands it runs
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            _log(cfg, f"{cfg.backend[0]} did not run ({e}): llvmlite optimises instead")
            return None
        if p.returncode != 0:
            why = (p.stderr.strip().splitlines() or ["no message"])[0]
            _log(cfg, f"{cfg.backend[0]} failed ({why}): llvmlite optimises instead")
            return None
        with open(out, "rb") as fh:
            return fh.read()
