"""Overwrite analysis: which loads may the reverse sweep re-execute instead of caching?

The reverse sweep runs after the whole forward sweep.  A load can be recomputed
there when the memory it reads

* is still alive (not a local ``alloca`` of the augmented forward function, not heap
  memory the function may free): arguments of a function whose caller keeps them
  unchanged until the reverse sweep (``stable_args``: the function differentiated
  at an ``__enzyme_autodiff`` call site), globals, memory reached through pointers
  loaded from such memory; constant globals always;
* is not written by any instruction that may execute after the load (later in its
  block, in any block reachable from it, the loop's later iterations included):
  stores, memcpy/memset/memmove, free/realloc, and calls that may write memory
  (per their ``memory(...)``/``readonly`` attributes; for the functions in the
  call-effects table, ``effects.py``, what the table says they write).

Alias reasoning is by underlying object: distinct allocas/mallocs (and local memory
versus arguments and globals) never alias, distinct globals never alias, an argument
marked ``noalias`` aliases nothing else, and two constant-offset accesses to the same
object alias only when their byte ranges overlap.  Everything else may alias.

The result is read-only; ``str(result)`` lists each load with its verdict and reason
(golden tests).
"""

from __future__ import annotations

import re

from ..ir.instructions import (Alloca, AtomicRMW, Call, Cast, CmpXchg, GEP, Load, Phi, Select,
                               Store, VAArg)
from ..ir.values import Argument, ConstantInt
from .effects import ALLOC_NAMES, call_effect, mpi_writes

__all__ = ["Overwrite", "underlying_objects", "call_writes"]

# object kinds
LOCAL, ARG, GLOBAL, CONST, UNKNOWN = "local", "arg", "global", "const", "unknown"


class _Obj:
    """An underlying object with the accessed byte range when known."""

    __slots__ = ("kind", "value", "offset")

    def __init__(self, kind, value, offset):
        self.kind, self.value, self.offset = kind, value, offset


def _gep_offset(g, dl):
    """Constant byte offset of a GEP, or None."""
    idx = g.indices
    if not idx or not all(isinstance(i, ConstantInt) for i in idx):
        return None
    try:
        off = idx[0].value * dl.size_in_bytes(g.source_type)
        return off + dl.offset_of(g.source_type, [i.value for i in idx[1:]])
    except Exception:  # noqa: BLE001 - unusual types: unknown offset
        return None


def underlying_objects(p, dl, limit=64):
    """The objects pointer ``p`` may point into, each with a constant byte offset (None
    when unknown).  Walks GEPs, casts, phis and selects."""
    out, seen = [], set()
    work = [(p, 0)]
    while work:
        v, off = work.pop()
        limit -= 1
        if limit < 0:
            out.append(_Obj(UNKNOWN, None, None))
            break
        if (v, off) in seen:
            continue
        seen.add((v, off))
        if isinstance(v, GEP):
            o = _gep_offset(v, dl)
            work.append((v.operand(0), None if o is None or off is None else off + o))
        elif isinstance(v, Cast) and v.opcode in ("bitcast", "addrspacecast"):
            work.append((v.operand(0), off))
        elif isinstance(v, Phi):
            work.extend((x, None) for x, _ in v.incoming)
        elif isinstance(v, Select):
            work.extend((x, None) for x in v.operands[1:])
        elif isinstance(v, Alloca):
            out.append(_Obj(LOCAL, v, off))
        elif isinstance(v, Call) and (v.callee_name or "") in ALLOC_NAMES:
            out.append(_Obj(LOCAL, v, off))
        elif isinstance(v, Argument):
            out.append(_Obj(ARG, v, off))
        elif getattr(v, "is_global", False) and hasattr(v, "value_type"):
            out.append(_Obj(CONST if getattr(v, "is_constant", False) else GLOBAL, v, off))
        else:
            out.append(_Obj(UNKNOWN, v, None))
    return out


def _attr_text(module, text):
    """Expand ``#N`` attribute-group references in ``text``."""
    if not text:
        return ""
    groups = getattr(module, "attribute_groups", {}) if module is not None else {}
    return re.sub(r"#(\d+)", lambda m: groups.get(m.group(1), ""), text)


def _memory_writes(text):
    """From function attributes: None (no write), 'args' (argument memory only) or
    'all'.  Returns 'all' when nothing is said."""
    if re.search(r"(?<![\w\"])(readnone|readonly)(?![\w\"])", text):
        return None
    m = re.search(r"\bmemory\(([^)]*)\)", text)
    if not m:
        return "all"
    writes = set()
    for part in m.group(1).split(","):
        part = part.strip()
        if ":" in part:
            kind, eff = (x.strip() for x in part.split(":", 1))
        else:
            kind, eff = "default", part
        if eff in ("write", "readwrite"):
            writes.add(kind)
    writes.discard("inaccessiblemem")
    if not writes:
        return None
    if writes == {"argmem"}:
        return "args"
    return "all"


def call_writes(call, module=None, pure=None):
    """What a call may write: None, 'all', or a list of pointer operands whose objects
    it may write (whole objects).  ``pure(name)`` names functions known to write
    no user memory (the AD layer passes its libm table)."""
    name = call.callee_name or ""
    args = call.args
    eff = call_effect(name)
    kind = eff.kind if eff is not None else None
    if eff is not None and eff.writes:
        return [args[k] for k, _ in eff.writes if k < len(args) and args[k].type.is_pointer]
    if kind in ("nomem", "typehint", "inactive", "math"):
        return None
    if kind == "omp":
        return "all"   # other threads of the team run meanwhile
    if kind == "mpi":
        return mpi_writes(name, args)
    if kind in ("memcpy", "memmove", "memset", "free"):
        return [args[0]]
    if kind == "alloc":
        if eff.frees is not None:
            return [args[eff.frees]]
        return [args[eff.out]] if eff.out is not None else None
    if pure is not None and pure(name):
        return None
    if name.startswith("llvm.") and not name.startswith(("llvm.masked.", "llvm.vp.",
                                                        "llvm.experimental.")):
        return None  # other intrinsics (min/max, reductions, ...) do not write memory
    fn = call.called_function
    text = _attr_text(module, call.fn_attrs)
    if fn is not None:
        text += " " + _attr_text(module, fn.fn_attrs)
    w = _memory_writes(text)
    if w is None:
        return None
    if w == "args":
        return [a for a in args if a.type.is_pointer]
    return "all"


def _noalias(a):
    return isinstance(a, Argument) and re.search(r"\bnoalias\b", a.attrs or "") is not None


def _may_alias(lo, lsize, wo, wsize):
    """Load object ``lo`` (size lsize) vs written object ``wo`` (size wsize or None)."""
    if lo.kind == CONST:
        return False  # constant memory is never written
    if wo.kind == LOCAL:
        # memory created by this function is not reachable through arguments or globals;
        # a pointer loaded from memory might point at it
        return lo.kind in (UNKNOWN, LOCAL) and (lo.kind == UNKNOWN or lo.value is wo.value)
    if lo.kind == LOCAL:
        return True
    if lo.kind == UNKNOWN or wo.kind == UNKNOWN:
        return True
    if lo.value is wo.value:
        if lo.offset is None or wo.offset is None or wsize is None:
            return True
        return lo.offset < wo.offset + wsize and wo.offset < lo.offset + lsize
    if lo.kind == GLOBAL and wo.kind == GLOBAL:
        return False
    return not (_noalias(lo.value) or _noalias(wo.value))


class Overwrite:
    """For each load of ``fn``: may the reverse sweep re-execute it?

    ``pure(name)``: calls known to write no user memory (libm).
    ``stable_args``: the caller keeps the memory behind the arguments (and globals)
    unchanged and alive from the call until the reverse sweep has run (true at an
    ``__enzyme_autodiff`` call site, false for callees and split mode)."""

    def __init__(self, fn, cfg, stable_args: bool, pure=None):
        self.fn = fn
        self.stable_args = stable_args
        module = getattr(fn, "parent", None)
        dl = module.datalayout
        self._dl = dl
        self.verdict: dict = {}
        self.reason: dict = {}
        # writers: (inst, block, position, [(obj, size)] or 'all')
        writers = []
        loads = []
        for b in cfg.rpo:
            for k, inst in enumerate(b.instructions):
                if isinstance(inst, Load):
                    loads.append((inst, b, k))
                    if inst.volatile or inst.ordering:
                        writers.append((b, k, "all"))
                    continue
                w = self._writes(inst, module, dl, pure)
                if w is not None:
                    writers.append((b, k, w))
        self._succs = cfg.succs
        self._reach: dict = {}
        for ld, b, k in loads:
            ok, why = self._decide(ld, b, k, writers, dl)
            self.verdict[ld] = ok
            self.reason[ld] = why

    @staticmethod
    def _writes(inst, module, dl, pure):
        if isinstance(inst, Store):
            size = dl.store_size(inst.operand(0).type)
            return [(o, size) for o in underlying_objects(inst.operand(1), dl)]
        if isinstance(inst, (AtomicRMW, CmpXchg, VAArg)):
            return [(o, None) for o in underlying_objects(inst.operand(0), dl)]
        if isinstance(inst, Call):
            w = call_writes(inst, module, pure)
            if w is None or w == "all":
                return w
            name = inst.callee_name or ""
            size = None
            if name.startswith(("llvm.mem", "mem")) and len(inst.args) >= 3 \
                    and isinstance(inst.args[2], ConstantInt):
                size = inst.args[2].value
            return [(o, size) for p in w for o in underlying_objects(p, dl)]
        return None

    def _reachable(self, b):
        """Blocks reachable from ``b`` through at least one edge."""
        r = self._reach.get(b)
        if r is None:
            r, work = set(), list(self._succs[b])
            while work:
                x = work.pop()
                if x not in r:
                    r.add(x)
                    work.extend(self._succs[x])
            self._reach[b] = r
        return r

    def _decide(self, ld, b, k, writers, dl):
        if ld.volatile or ld.ordering:
            return False, "volatile or atomic"
        objs = underlying_objects(ld.operand(0), dl)
        for o in objs:
            if o.kind == LOCAL:
                return False, "local memory (gone or changed before the reverse sweep)"
            if o.kind != CONST and not self.stable_args:
                return False, "caller's memory may change before the reverse sweep"
        size = dl.store_size(ld.type)
        reach = self._reachable(b)
        for wb, wk, w in writers:
            if not ((wb is b and wk > k) or wb in reach):
                continue
            if w == "all":
                if any(o.kind != CONST for o in objs):
                    return False, f"a later call may write memory ({wb.name})"
                continue
            for lo in objs:
                for wo, wsize in w:
                    if _may_alias(lo, size, wo, wsize):
                        return False, f"may be overwritten later ({wb.name})"
        return True, "not overwritten"

    def can_recompute(self, load) -> bool:
        return self.verdict.get(load, False)

    def __str__(self):
        out = []
        for b in self.fn.blocks:
            for inst in b.instructions:
                if inst in self.verdict:
                    name = inst.name if inst.name is not None else "load"
                    out.append(f"{name}: {'recompute' if self.verdict[inst] else 'cache'} "
                               f"({self.reason[inst]})")
        return "\n".join(out)
