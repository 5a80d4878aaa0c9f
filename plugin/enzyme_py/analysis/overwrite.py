"""Overwrite analysis: which loads may the reverse sweep re-execute instead of caching?

The reverse sweep runs after the whole forward sweep.  A load can be recomputed
there when the memory it reads

* is still alive (not a local ``alloca`` of the augmented forward function nor a
  by-value (``byval``) argument, its own copy; not heap memory the function may free):
  arguments of a function whose caller keeps them unchanged until the reverse sweep
  (``stable_args``: the function differentiated at an ``__enzyme_autodiff`` call site,
  all of them; a callee, those its caller's analysis proves, ``callee_stable``),
  globals and memory reached through pointers loaded from such memory or returned by
  calls (at an ``__enzyme_autodiff`` call site: when no local's address escapes --
  else such a pointer may lead into the augmented forward's frame, gone by the reverse
  sweep: it returned, or was inlined and its locals' lifetimes ended, their slots free
  for the reverse's own); constant globals always;
* is not written by any instruction that may execute after the load (later in its
  block, in any block reachable from it, the loop's later iterations included):
  stores, memcpy/memset/memmove, free/realloc, and calls that may write memory
  (per their ``memory(...)``/``readonly`` attributes; for the functions in the
  call-effects table, ``effects.py``, what the table says they write; for defined
  functions without such attributes, what their bodies write, ``_callee_writes``),
* or, when every instruction that may overwrite it that way is a plain store outside
  loops, into the caller's memory (an argument or a global), that executes after every
  execution of the load and after every block whose reverse may read the load again
  (``_reread_blocks``): the reverse sweep undoes those stores (``restores``: the
  augmented forward saves the value each one overwrites, the reverse of the store puts
  it back, Tapenade-style), so the memory reads again what the load read; the reverse
  then writes back, in forward order, what each undone store had left, so the caller
  still sees the primal's results.  This is the case of an out-parameter written at
  the end (``*err = ...``) that may alias the inputs.  A callee's argument is stable
  on the same terms: the caller's later writers that may alias it are stores undone
  before the reverse reaches the call.

Alias reasoning is by underlying object: distinct allocas/mallocs (and local memory
versus arguments and globals) never alias, distinct globals never alias, an argument
marked ``noalias`` aliases nothing else (nor does a callee's argument that points into
its caller's local memory where no other argument of the call points,
``callee_noalias``), and two constant-offset accesses to the same
object alias only when their byte ranges overlap.  Everything else may alias.

The result is read-only; ``str(result)`` lists each load with its verdict and reason
(golden tests).
"""

from __future__ import annotations

from ..ir.attributes import Attributes, resolved
from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Call, Cast, CmpXchg, GEP, Load, Phi,
                               Select, Store, VAArg)
from ..ir.values import Argument, ConstantInt
from .effects import ALLOC_NAMES, TEXT_SPLITTERS, call_effect, mpi_writes

__all__ = ["Overwrite", "underlying_objects", "call_writes"]

# object kinds
LOCAL, ARG, GLOBAL, CONST, UNKNOWN = "local", "arg", "global", "const", "unknown"


def _writer(inst) -> str:
    """An instruction that may write memory, for a reason text: ``a store at line 12``,
    ``a call to f`` (the line where debug information gives it, else the block)."""
    if isinstance(inst, Call):
        name = inst.callee_name
        what = f"a call to {name}" if name else "an indirect call"
    else:
        what = f"a {inst.opcode}"
    loc = inst.debug_loc if inst.parent is not None else None
    if loc is not None:
        return f"{what} at line {loc[1]}"
    block = inst.parent.name if inst.parent is not None else None
    return f"{what} in block {block}" if block else what


class _Obj:
    """An underlying object with the accessed byte range when known."""

    __slots__ = ("kind", "value", "offset")

    def __init__(self, kind, value, offset):
        self.kind, self.value, self.offset = kind, value, offset


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
            o = v.constant_offset(dl)
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
            # a by-value aggregate is the function's own copy, gone after it returns
            byval = "byval(" in (v.attrs or "")
            out.append(_Obj(LOCAL if byval else ARG, v, off))
        elif getattr(v, "is_global", False) and hasattr(v, "value_type"):
            out.append(_Obj(CONST if getattr(v, "is_constant", False) else GLOBAL, v, off))
        else:
            out.append(_Obj(UNKNOWN, v, None))
    return out


_NO_CAPTURE_CALLS = ("llvm.lifetime.", "llvm.dbg.", "llvm.memcpy.", "llvm.memmove.",
                     "llvm.memset.", "llvm.assume", "llvm.experimental.noalias.scope.decl")


def _escapes(alloca) -> bool:
    """Whether the address of ``alloca`` (or a pointer derived from it) leaves the
    function's view: stored as a value, passed to a call that may keep or return it,
    returned, or turned into an integer."""
    from .activity import address_uses
    for u in address_uses(alloca, set(), merges=True):
        user = u.user
        if isinstance(user, Load) or isinstance(user, Store) and u.index == 1 \
                or getattr(user, "opcode", None) == "icmp" \
                or isinstance(user, Call) and (user.callee_name or "").startswith(
                    _NO_CAPTURE_CALLS):
            continue
        return True
    return False


def _memory_writes(attrs):
    """From function attributes (an ``Attributes``, groups resolved): None (no write),
    'args' (argument memory only) or 'all'.  Returns 'all' when nothing is said; of
    several ``memory(...)``, the first (the call site's before the callee's)."""
    if attrs.has("readnone") or attrs.has("readonly"):
        return None
    effects = attrs.arg("memory")
    if effects is None:
        return "all"
    writes = set()
    for part in effects.split(","):
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
    if name in TEXT_SPLITTERS:
        return "all"    # (NUL bytes into the text split by an earlier call: effects.py)
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
    attrs = resolved(module, call.fn_attrs)
    if fn is not None:
        attrs |= resolved(module, fn.fn_attrs)
    w = _memory_writes(attrs)
    if w is None:
        return None
    if fn is not None and not fn.is_declaration:
        s = _callee_writes(fn, module, pure, set())
        if s != "all":
            if s is None or not s:
                return None
            return [args[k] for k in sorted(s) if k < len(args)]
    if w == "args":
        return [a for a in args if a.type.is_pointer]
    return "all"


def _callee_writes(fn, module, pure, busy, depth=0):
    """What a defined function may write, from its body: None (nothing its caller can
    see: only its own allocas and mallocs), a set of argument indices (whole objects
    behind those pointer arguments), or 'all' (globals, memory reached through loaded
    pointers, anything not understood, recursion, or a call chain deeper than 4)."""
    if fn in busy or depth > 4 or fn.is_declaration:
        return "all"
    busy = busy | {fn}
    dl = module.datalayout
    out: set = set()

    def objects(p):
        for o in underlying_objects(p, dl):
            if o.kind == LOCAL or o.kind == CONST:
                continue
            if o.kind == ARG and o.value.parent is fn:
                out.add(o.value.index)
                continue
            return False
        return True

    for inst in fn.instructions():
        if isinstance(inst, Store):
            if inst.volatile or not objects(inst.operand(1)):
                return "all"
        elif isinstance(inst, (AtomicRMW, CmpXchg, VAArg)):
            if not objects(inst.operand(0)):
                return "all"
        elif isinstance(inst, Call):
            callee = inst.called_function
            if callee is not None and callee in busy:
                return "all"
            w = call_writes(inst, module, pure) if (callee is None or callee.is_declaration) \
                else _callee_writes_at(inst, module, pure, busy, depth)
            if w == "all":
                return "all"
            for p in w or ():
                if not objects(p):
                    return "all"
        elif isinstance(inst, Load) and (inst.volatile or inst.ordering):
            return "all"
    return out or None


def _callee_writes_at(call, module, pure, busy, depth):
    """The pointer operands of ``call`` (to a defined function) whose objects it may
    write, None, or 'all'."""
    s = _callee_writes(call.called_function, module, pure, busy, depth + 1)
    if s is None or s == "all":
        return s
    return [call.args[k] for k in sorted(s) if k < len(call.args)]


def _noalias(a, extra=frozenset()):
    return isinstance(a, Argument) and (a.index in extra
                                         or Attributes.parse(a.attrs).has("noalias"))


def _may_alias(lo, lsize, wo, wsize, noalias=frozenset()):
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
    return not (_noalias(lo.value, noalias) or _noalias(wo.value, noalias))


class Overwrite:
    """For each load of ``fn``: may the reverse sweep re-execute it?

    ``pure(name)``: calls known to write no user memory (libm).
    ``stable_args``: the caller keeps the memory behind the arguments (and globals)
    unchanged and alive from the call until the reverse sweep has run (true at an
    ``__enzyme_autodiff`` call site, false in split mode), or the set of argument
    indices for which it does (a callee: ``callee_stable`` of its caller's analysis).
    ``noalias_args``: argument indices that alias no other argument or global
    (``callee_noalias``: the caller passes its own local memory there).

    For each call to a defined function, ``callee_stable[call]`` and
    ``callee_noalias[call]`` say the same of the callee's arguments at that call (what
    the callee's own analysis may assume); the stores that must be undone for that are
    in ``restores`` too."""

    def __init__(self, fn, cfg, stable_args, pure=None, noalias_args=frozenset()):
        self.fn = fn
        self.stable_args = stable_args
        self.noalias_args = noalias_args
        self._escaping = None
        module = getattr(fn, "parent", None)
        dl = module.datalayout
        self._dl = dl
        self.verdict: dict = {}
        self.reason: dict = {}
        self.restores: dict = {}   # store -> None: undone by the reverse (forward order)
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
        undo = set()
        for ld, b, k in loads:
            ok, why, stores = self._decide(ld, b, k, writers, dl)
            undo.update(stores)
            self.verdict[ld] = ok
            self.reason[ld] = why
        self.callee_stable: dict = {}
        self.callee_noalias: dict = {}
        if stable_args:
            for b in cfg.rpo:
                for k, inst in enumerate(b.instructions):
                    if isinstance(inst, Call) and inst.called_function is not None \
                            and not inst.called_function.is_declaration:
                        self._callee_facts(inst, b, k, writers, dl, undo)
        for b in cfg.rpo:
            for inst in b.instructions:
                if inst in undo:
                    self.restores[inst] = None

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
        """(recomputable, why, the stores the reverse must undo for that)."""
        if ld.volatile or ld.ordering:
            return False, "volatile or atomic", ()
        objs = underlying_objects(ld.operand(0), dl)
        for o in objs:
            if o.kind == LOCAL:
                return False, "local memory (gone or changed before the reverse sweep)", ()
            if not self._stable(o):
                return False, "caller's memory may change before the reverse sweep", ()
        size = dl.store_size(ld.type)
        reach = self._reachable(b)
        later = []
        for wb, wk, w in writers:
            if not ((wb is b and wk > k) or wb in reach):
                continue
            if w == "all":
                if any(o.kind != CONST for o in objs):
                    return False, f"{_writer(wb.instructions[wk])} may write any memory", ()
                continue
            if any(_may_alias(lo, size, wo, wsize, self.noalias_args)
                   for lo in objs for wo, wsize in w):
                later.append((wb, wk))
        if not later:
            return True, "not overwritten", ()
        # may every such writer be undone in the reverse (see the module docstring)?
        why = f"may be overwritten later by {_writer(later[0][0].instructions[later[0][1]])}"
        stores = []
        reread = None
        for wb, wk in later:
            st = wb.instructions[wk]
            if not self._undoable(st, wb, b, dl):
                return False, why, ()
            if reread is None:
                reread = self._reread_blocks(ld)
            if wb in reread or any(x in reread for x in self._reachable(wb)):
                return False, why, ()
            stores.append(st)
        return True, "the stores after it are undone in the reverse " \
            f"({_writer(later[0][0].instructions[later[0][1]])})", stores

    def _stable(self, o):
        """Whether object ``o`` stays unchanged and alive until the reverse sweep (but
        for this function's own writes)."""
        if o.kind == CONST:
            return True
        if self.stable_args is True:
            # memory reached through a loaded (or returned) pointer: the caller's, or a
            # local of this function whose address escaped -- gone by the reverse sweep
            # (the augmented forward returned, or was inlined and its locals'
            # lifetimes ended)
            return o.kind != LOCAL and (o.kind != UNKNOWN or not self._locals_escape())
        return bool(self.stable_args) and o.kind == ARG and o.value.index in self.stable_args

    def _locals_escape(self) -> bool:
        """Whether the address of any local (``alloca``) of the function escapes: is
        stored, passed to a call (other than lifetime markers and memory intrinsics),
        returned or converted to an integer -- so a pointer loaded from memory or
        returned by a call may point into this function's frame."""
        if self._escaping is None:
            self._escaping = any(_escapes(a) for b in self.fn.blocks
                                 for a in b.instructions if isinstance(a, Alloca))
        return self._escaping

    def _undoable(self, st, wb, b, dl):
        """Whether the reverse may undo ``st`` (in block ``wb``) for a read in block
        ``b``: a plain store outside loops, after ``b`` without a way back, into memory
        the caller keeps alive (not a local of the augmented forward, which is gone by
        then, nor memory reached through a loaded pointer)."""
        if not isinstance(st, Store) or st.volatile or st.ordering \
                or wb in self._reachable(wb) or b in self._reachable(wb):
            return False
        return all(o.kind in (ARG, GLOBAL) and self._stable(o)
                   for o in underlying_objects(st.operand(1), dl))

    def _callee_facts(self, call, b, k, writers, dl, undo):
        """``callee_stable``/``callee_noalias`` of a call (see the class docstring).  An
        argument is stable for the callee when its objects are stable here and every
        later writer that may alias them is a store the reverse undoes before it reaches
        the call's reverse (where the callee's reverse reads them); it is noalias when
        it points into local memory here that no other pointer argument reaches."""
        args = call.args
        objs = {j: underlying_objects(a, dl) for j, a in enumerate(args) if a.type.is_pointer}
        stable, noalias = set(), set()
        reach = self._reachable(b)
        for j, os_ in objs.items():
            mine = {id(o.value) for o in os_}
            if all(o.kind == LOCAL for o in os_) and all(
                    o.kind != UNKNOWN and id(o.value) not in mine
                    for i, oth in objs.items() if i != j for o in oth):
                noalias.add(j)
                continue
            if not all(o.kind != LOCAL and self._stable(o) for o in os_):
                continue
            stores, ok = [], True
            for wb, wk, w in writers:
                if not ((wb is b and wk > k) or wb in reach):
                    continue
                # the callee may read any part of the objects
                if w == "all" or any(_may_alias(_Obj(lo.kind, lo.value, None), 8, wo, None,
                                                self.noalias_args)
                                     for lo in os_ for wo, _ in w):
                    st = wb.instructions[wk]
                    if w == "all" or not self._undoable(st, wb, b, dl):
                        ok = False
                        break
                    stores.append(st)
            if ok:
                stable.add(j)
                undo.update(stores)
        if stable:
            self.callee_stable[call] = frozenset(stable)
        if noalias:
            self.callee_noalias[call] = frozenset(noalias)

    def _reread_blocks(self, ld):
        """The blocks whose reverse may read ``ld``'s memory again: those of the
        instructions that use its value through pure instructions, loads (as an
        address) and phis that may be inductions (recomputed from their start), and
        of the calls, terminators and stores to an address computed from it that end
        such a chain.  Other phis end it without a block: the reverse caches them."""
        out, seen, work = {ld.parent}, set(), [ld]
        while work:
            v = work.pop()
            for u in v.uses:
                user = u.user
                if user in seen or not user.is_instruction or user.parent is None:
                    continue
                if isinstance(user, Store) and u.index == 0:
                    continue    # the reverse of a store needs its address, not its value
                if isinstance(user, Phi) and not self._induction_like(user):
                    continue    # the reverse caches such a phi's value, needs no operand
                seen.add(user)
                out.add(user.parent)
                if isinstance(user, (Call, Store)) or user.is_terminator:
                    continue
                work.append(user)
        return out

    @staticmethod
    def _induction_like(phi):
        """Whether ``phi`` may be an induction variable (an incoming value is an add or
        GEP of the phi itself), which the reverse recomputes from its start value."""
        return any(isinstance(v, (BinaryOp, GEP)) and v.num_operands > 1
                   and v.operand(0) is phi for v, _ in phi.incoming)

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
