"""The llvmlite bridge: the only module that imports ``llvmlite.binding``.

Everything EnzymePy asks of LLVM goes through here: reading bitcode, linking
modules, printing and parsing textual IR, running the optimisation pipelines,
verifying, emitting native objects for the host, and JIT-compiling modules for
tests.  Module handles returned by these functions are ``llvmlite`` objects;
callers treat them as opaque and pass them back in.
"""

from __future__ import annotations

import ctypes
import functools
import re
from dataclasses import dataclass

import llvmlite.binding as _llvm

from .errors import EnzymeError

__all__ = [
    "LLVMError",
    "PipelineOptions",
    "llvm_version",
    "new_context",
    "parse_bitcode",
    "parse_assembly",
    "to_bitcode",
    "to_text",
    "link",
    "module_symbols",
    "verify",
    "optimize",
    "emit_object",
    "Jit",
]


class LLVMError(EnzymeError):
    """LLVM rejected a module (bad bitcode, IR that does not verify, ...)."""


# The SLP vectorizer schedules each basic block in regions of at most this many
# instructions (LLVM's default: 100,000).  Its time grows faster than linearly with
# the region, and generated straight-line code (a chemistry mechanism's rates, and
# more so their gradient: one block of some 40,000 instructions) spends most of the
# final -O2 there (``python -m benchmarks.compile_time --only chem``: llvmlite -O2
# 3.1 s with LLVM's default, 2.2 s with 30,000, 1.8 s with 10,000, and that gradient
# runs as fast with each: 3.37, 3.33, 3.28 us; 3,000 starts to cost it: 3.50 us).  Of
# the benchmark kernels' gradients only the LSTMs' compile differently at 10,000 than
# at 30,000, and run as fast or faster.  (llvmlite's LLVM is built with assertions,
# which roughly doubles every pass's time against a release LLVM: SLP alone 1.46 s
# here where opt-22 takes 0.89 s.)
SLP_SCHEDULE_BUDGET = 10000

# The pre-AD pipeline's NewGVN (``optimize_functions``) runs without its "phi of ops"
# transformation: in LLVM 22 it miscompiles a two-trip loop over a state struct copied
# by value and back (a 2D shallow-water flux sweep, round BA: ``opt-22 -passes=newgvn``
# alone changes what the function computes), and the derivative is then the exact
# derivative of the wrong function, and its primal result wrong too.  Without it the
# benchmark kernels' code is the same except heat2d's and rk4's, which run as fast.
NEWGVN_PHI_OF_OPS = False


@functools.cache
def _init() -> None:
    _llvm.initialize_native_target()
    _llvm.initialize_native_asmprinter()
    _llvm.initialize_native_asmparser()
    # once per process: LLVM counts an option's occurrences across calls
    _llvm.set_option("enzyme-cc", f"-slp-schedule-budget={SLP_SCHEDULE_BUDGET}")
    _llvm.set_option("enzyme-cc", f"-enable-phi-of-ops={str(NEWGVN_PHI_OF_OPS).lower()}")


def llvm_version() -> str:
    """The version of the LLVM that llvmlite carries, e.g. ``"22.1.0"``."""
    return ".".join(str(p) for p in _llvm.llvm_version_info)


def llvm_major() -> int:
    return _llvm.llvm_version_info[0]


def new_context():
    """A fresh LLVM context.  Modules that are linked together must share one;
    everything else gets its own, so that nothing (named types, uniqued debug
    metadata) outlives the module that made it in a long-lived process."""
    _init()
    return _llvm.create_context()


def parse_bitcode(data: bytes, what: str = "bitcode", context=None):
    """Read a bitcode buffer into a module handle (in ``context``, else a new one)."""
    _init()
    try:
        return _llvm.parse_bitcode(data, context or _llvm.create_context())
    except RuntimeError as e:
        raise LLVMError(f"cannot read {what}: {_first_line(e)}") from None


def parse_assembly(text: str, what: str = "IR", context=None):
    """Parse textual IR into a module handle (in ``context``, else a new one) and
    verify it."""
    _init()
    try:
        mod = _llvm.parse_assembly(text, context or _llvm.create_context())
    except RuntimeError as e:
        raise LLVMError(f"LLVM cannot parse {what}: {e}") from None
    verify(mod, what)
    return mod


def to_text(mod) -> str:
    return str(mod)


def to_bitcode(mod) -> bytes:
    return mod.as_bitcode()


def link(modules: list) -> object:
    """Link module handles into the first one (the others are consumed)."""
    if not modules:
        raise ValueError("link: no modules")
    dst = modules[0]
    for src in modules[1:]:
        try:
            dst.link_in(src)
        except RuntimeError as e:
            raise LLVMError(f"link failed: {e}") from None
    return dst


_LOCAL_LINKAGES = {_llvm.Linkage.internal, _llvm.Linkage.private}


def module_symbols(mod) -> tuple[set[str], set[str]]:
    """(defined, undefined) external symbols of a module, as a linker sees them."""
    defined: set[str] = set()
    undefined: set[str] = set()
    for gv in list(mod.functions) + list(mod.global_variables):
        name = gv.name
        if not name or name.startswith("llvm."):
            continue
        if gv.is_declaration:
            undefined.add(name)
        elif gv.linkage not in _LOCAL_LINKAGES:
            defined.add(name)
    return defined, undefined - defined


def verify(mod, what: str = "module") -> None:
    try:
        mod.verify()
    except RuntimeError as e:
        raise LLVMError(f"{what} does not verify: {e}") from None


@dataclass(frozen=True)
class PipelineOptions:
    """Options of LLVM's default O-level pipeline.

    ``level`` is 0..3.  llvmlite's pass builder has no size levels, so
    ``-Os``/``-Oz`` run the ``-O2`` pipeline; clang's ``optsize``/``minsize``
    function attributes still steer the passes that honour them.
    ``vectorize`` and ``unroll`` switch the loop/SLP vectorizers and the loop
    unroller (the pre-AD pipeline turns them off so the AD pass sees scalar
    loops; the final pipeline keeps them on).
    """

    level: int = 2
    vectorize: bool = True
    unroll: bool = True


def _target_machine(cpu: str = "", features: str = "", level: int = 2, triple: str = ""):
    """A TargetMachine for ``triple`` (default: the host's).  ``cpu="host"``
    means this machine's CPU and features (``-march=native``); an empty cpu
    is LLVM's generic CPU for the triple, so objects run on any machine of
    that architecture (functions still carry clang's target-cpu attributes)."""
    _init()
    target = _llvm.Target.from_triple(triple or _llvm.get_process_triple())
    if cpu == "host":
        cpu, features = _llvm.get_host_cpu_name(), features or _host_features()
    return target.create_target_machine(
        cpu=cpu,
        features=features,
        opt=max(0, min(level, 3)),
        reloc="pic",
        codemodel="default",
    )


@functools.cache
def _host_features() -> str:
    try:
        return _llvm.get_host_cpu_features().flatten()
    except RuntimeError:
        return ""


def optimize(mod, options: PipelineOptions = PipelineOptions()) -> None:
    """Run LLVM's default ``-O<level>`` module pipeline on ``mod`` in place."""
    if options.level == 0:
        # -O0 still needs always_inline honoured, as clang does.
        tm = _target_machine(level=0, triple=mod.triple)
        pto = _llvm.create_pipeline_tuning_options(speed_level=0)
        pb = _llvm.create_pass_builder(tm, pto)
        pm = _llvm.create_new_module_pass_manager()
        pm.add_always_inliner_pass()
        pm.run(mod, pb)
        return
    tm = _target_machine(level=options.level, triple=mod.triple)
    pto = _llvm.create_pipeline_tuning_options(speed_level=options.level)
    pto.loop_vectorization = options.vectorize
    pto.slp_vectorization = options.vectorize
    pto.loop_unrolling = options.unroll
    pto.loop_interleaving = options.unroll
    pb = _llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)


# a call to an __enzyme_* entry point passing an argument byval: ``byval(%struct.T)``
_ENZYME_BYVAL = re.compile(r"^(\s*(?:%\S+ = )?(?:tail |notail |musttail )?(?:call|invoke) "
                           r"[^\n]*@__enzyme_\w+\([^\n]*)$", re.M)


_BYVAL_ARG = re.compile(r"byval\((%[^)]+|\{[^}]*\})\) align (\d+) (%[\w.]+)")
_COPY_INTO = re.compile(r"call void @llvm\.memcpy\.p0\.p0\.i64\(ptr (?:noundef )?align \d+ "
                        r"(%[\w.]+), ptr (?:noundef )?align \d+ (%[\w.]+), i64 \d+, i1 false\)")


def _by_reference(text: str) -> str:
    """``text`` with the structs ``__enzyme_*`` calls take ``byval`` passed ``byref``,
    each the object itself where clang copied it into a temporary just for the call
    (C++ passes a named struct through a ``memcpy`` into an ``agg.tmp``): the adjoint
    must land in the caller's ``dL``, not in the temporary."""
    lines = text.split("\n")
    for k, line in enumerate(lines):
        if not _ENZYME_BYVAL.match(line) or "byval(" not in line:
            continue
        start = k
        while start > 0 and not lines[start].startswith("define"):
            start -= 1
        end = k
        while end < len(lines) - 1 and lines[end] != "}":
            end += 1
        body = lines[start:end]

        def arg(m, body=body, call=line):
            return f"byref({m.group(1)}) align {m.group(2)} " \
                   f"{_temporary_of(m.group(3), body, call) or m.group(3)}"
        lines[k] = _BYVAL_ARG.sub(arg, line)
    return "\n".join(lines)


def _temporary_of(x: str, body: list, call: str) -> str | None:
    """The struct the local ``x`` is a copy of, where ``body`` (a function's lines) uses
    ``x`` only to define it, mark its lifetime, ``memcpy`` one struct into it and pass it
    in ``call``; else None."""
    token = re.compile(re.escape(x) + r"(?![\w.])")
    src = None
    for line in body:
        if not token.search(line) or line is call:
            continue
        got = _COPY_INTO.search(line)
        if got and got.group(1) == x and src is None:
            src = got.group(2)
        elif not (line.lstrip().startswith(x + " = alloca") or "llvm.lifetime." in line):
            return None
    return src


def enzyme_calls_by_value(data: bytes) -> bool:
    """Whether the bitcode ``data`` (a translation unit, optimised) passes a struct by
    value (``byval``) to an ``__enzyme_*`` entry point: ``__enzyme_autodiff(f,
    enzyme_dup, s, ds)`` with ``s`` and ``ds`` structs (see ``prelink``)."""
    if b"__enzyme_" not in data:
        return False
    text = str(parse_bitcode(data, "the compiled bitcode"))
    return any("byval(" in m.group(1) for m in _ENZYME_BYVAL.finditer(text))


def prelink(data: bytes, level: int, choose=None, by_reference=False) -> bytes | None:
    """``data``: a translation unit's bitcode before optimisation (clang
    ``-Xclang -disable-llvm-passes``).  Mark ``noinline`` every function defined here
    that ``choose(ir_text)`` names (the functions a custom rule is for, or marked
    inactive: see ``registry.Registry.out_of_line``), so that the inliner keeps them
    out of line and the AD pass finds the calls; with ``by_reference``, pass the
    structs an ``__enzyme_*`` call takes by value by reference instead (``byref``):
    the AD pass writes the adjoints of a shadow struct into the caller's object, as
    Enzyme does, and the optimiser must not assume the call leaves it unchanged (a
    ``byval`` argument is a copy: clang folds the caller's later reads of ``dL.scale``
    to the value before the call, or passes a constant in read-only data).  Then run
    the ``-O<level>`` pipeline without vectorisation and unrolling (as clang's
    pre-link pipeline leaves it; at level 0 only the always-inliner, as clang -O0).
    Returns the optimised bitcode, or None when there is nothing to do."""
    mod = parse_bitcode(data, "the unoptimised bitcode")
    changed = 0
    if by_reference:
        text = str(mod)
        new = _by_reference(text)
        if new != text:
            mod = parse_assembly(new, "the unoptimised bitcode with by-reference structs")
            changed += 1
    for name in sorted(choose(str(mod)) if choose is not None else ()):
        try:
            fn = mod.get_function(name)
        except NameError:
            continue
        if fn.is_declaration or any(b"alwaysinline" in a for a in fn.attributes):
            continue
        fn.add_function_attribute("noinline")
        changed += 1
    if not changed:
        return None
    optimize(mod, PipelineOptions(level=level, vectorize=False, unroll=False))
    verify(mod, "the module after pre-link optimisation")
    return mod.as_bitcode()


def emit_object(mod, level: int = 2, cpu: str = "", features: str = "") -> bytes:
    """Compile ``mod`` to a native relocatable object (PIC); see
    :func:`_target_machine` for ``cpu``."""
    tm = _target_machine(cpu=cpu, features=features, level=level, triple=mod.triple)
    try:
        return tm.emit_object(mod)
    except RuntimeError as e:
        raise LLVMError(f"code generation failed: {e}") from None


def emit_assembly(mod, level: int = 2, cpu: str = "", features: str = "") -> str:
    """``mod`` as native assembly text (what ``clang -S`` writes)."""
    tm = _target_machine(cpu=cpu, features=features, level=level, triple=mod.triple)
    try:
        return tm.emit_assembly(mod)
    except RuntimeError as e:
        raise LLVMError(f"code generation failed: {e}") from None


class Jit:
    """JIT-compile a module for tests.

    ``Jit(mod).function("f", ctypes.c_double, ctypes.c_double)`` is a callable.
    """

    def __init__(self, mod, level: int = 2):
        _init()
        tm = _target_machine(cpu="host", level=level, triple=mod.triple)
        self._engine = _llvm.create_mcjit_compiler(mod, tm)
        self._engine.finalize_object()
        self._engine.run_static_constructors()

    def address(self, name: str) -> int:
        addr = self._engine.get_function_address(name)
        if not addr:
            raise KeyError(name)
        return addr

    def function(self, name: str, restype, *argtypes):
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def optimize_functions(text: str, names: list[str], level: int = 2) -> str:
    """Pre-AD optimisation: run a scalar function pipeline (SROA, instcombine,
    simplifycfg, GVN, ... — no vectorisation, no unrolling, no inlining) on the
    named functions of the module ``text`` only; returns the module's text."""
    mod = parse_assembly(text, "the module before pre-AD optimisation")
    tm = _target_machine(level=level, triple=mod.triple)
    pto = _llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = pto.slp_vectorization = False
    pto.loop_unrolling = pto.loop_interleaving = False
    pb = _llvm.create_pass_builder(tm, pto)
    fpm = _llvm.create_new_function_pass_manager()
    fpm.add_sroa_pass()
    fpm.add_instruction_combine_pass()
    fpm.add_simplify_cfg_pass()
    fpm.add_sroa_pass()
    fpm.add_new_gvn_pass()
    fpm.add_instruction_combine_pass()
    fpm.add_dead_store_elimination_pass()
    fpm.add_simplify_cfg_pass()
    fpm.add_aggressive_dce_pass()
    for name in names:
        fn = mod.get_function(name)
        fpm.run(fn, pb)
    verify(mod, "the module after pre-AD optimisation")
    return str(mod)


def promote_functions(text: str, names: list[str]) -> str:
    """Before reading ``__enzyme_*`` call sites: inline ``alwaysinline`` functions and
    promote locals (SROA, instcombine) in the named functions, so that values passed
    through local memory (``<enzyme/utils>`` at -O0) reach the calls directly.  No
    module-level optimisation: marker globals must stay loads.  Returns the text."""
    mod = parse_assembly(text, "the module before call-site promotion")
    tm = _target_machine(level=2, triple=mod.triple)
    pto = _llvm.create_pipeline_tuning_options(speed_level=2)
    pb = _llvm.create_pass_builder(tm, pto)
    mpm = _llvm.create_new_module_pass_manager()
    mpm.add_always_inliner_pass()
    mpm.run(mod, pb)
    fpm = _llvm.create_new_function_pass_manager()
    fpm.add_sroa_pass()
    fpm.add_instruction_combine_pass()
    fpm.add_sroa_pass()
    for name in names:
        try:
            fn = mod.get_function(name)
        except NameError:
            continue  # an always_inline function, inlined and gone
        if not fn.is_declaration:
            fpm.run(fn, pb)
    verify(mod, "the module after call-site promotion")
    return str(mod)

