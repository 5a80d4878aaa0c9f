"""Byte-offset types of memory, by unification: what each pointer points at, offset by offset.

``types.memory_kinds`` answers "what does this object hold?" from the typed accesses
reachable from a pointer's own object.  It does not follow pointers *kept in memory*: a
``std::vector<double>``'s buffer is reached only by loading ``_M_start`` from the vector,
so a ``memmove`` between two such buffers in ``std::copy`` (``vector(n, proto)`` at -O0
and -O2) saw no typed access at all.  This module does, with byte offsets.

The model is Steensgaard's unification-based points-to analysis made field-sensitive
with byte offsets and strides, used for types (the role of Enzyme's TypeAnalysis type
trees; unlike Enzyme's it is flow-insensitive, and context-sensitive only for small
helpers -- see below):

- Every pointer value belongs to one *class* of memory at a byte offset from the class's
  base: ``q = gep p, 16`` puts ``q`` at ``p``'s offset + 16; casts, phis, selects, a
  call's arguments and its callee's parameters, a callee's returned value and the call,
  the two sides of a memcpy/memmove, all unify.
- A GEP with a variable index (``p + 8*i``) makes the class *periodic* with the index's
  stride: offsets are known modulo the period (an array of 24-byte structs keeps its
  three fields apart; an array of doubles is "every 8 bytes: double").  An index some
  instruction divides exactly (``ashr exact %bytes, 4``: a multiple of 16) steps by the
  divisor, and an index that is the distance between two pointers at one offset of a
  class (``result + (last - first)``) by that class's period, settled once every class
  has its period.  Except a byte
  pointer (``p + n``, stride 1) used only to read and write single bytes -- the
  characters of a string kept inline in an object, ``buf[len] = 0``: its accesses are
  the class's *anywhere* facts, which every question about the class meets (but one
  about fields at fixed offsets beside them, ``kinds(..., text=False)``), and the
  class keeps its offsets (folded with period 1, the fields of every object holding a
  string would have merged).
- Each class records the kinds accessed at each offset ('double', 'float', 'int',
  'ptr', 'float-other'): loads, stores, atomics (integer accesses that TBAA calls
  double/pointer count as such, as in ``types``), the declared layout of allocas and
  globals, constant initialisers and the ``__enzyme_double/float/integer/pointer`` hints.
- A pointer stored at offset o of a class, or loaded from there, belongs to the class's
  *field* at o -- the pointee class: the buffer behind every ``_M_start`` of an array
  of vectors is one class, typed by the stores ``v[i][j] = x`` make through it.  Pointers
  copied as pointer-sized integers (InstCombine's ``load i64``/``store i64`` of a
  pointer, ``ptrtoint``/``inttoptr``) are followed the same way.

- A small helper (at most ``_SMALL`` instructions: ``std::forward``, ``std::get``,
  ``__niter_base``, an accessor, a constructor) is analysed once per call site, as if
  inlined, its parameters bound to the arguments' classes, so the objects of two
  callers are not merged through it; a question about one of its values joins the
  answers of its call sites.
- A class that a function's address flows into is *code*: a function pointer kept in
  an object (``is_code``).

It is an over-approximation: two objects that are ever unified share their facts, so a
query can only return more kinds than the memory holds, never fewer -- except for memory
written where the analysis cannot see (an external function, a pointer rebuilt from
integer arithmetic), which ``types`` does not see either.  Only the functions the AD pass
has materialised and the defined functions they call are analysed (the rest of a C++
module stays unparsed).

``MemoryTypes.of(module)`` builds the analysis once per module; ``kinds(p, offset, size)``
answers for ``size`` bytes at ``p`` (``size=None``: to the end of the object);
``tree(p)`` is the printable type tree of what ``p`` points at, e.g. the buffer of a
``std::vector<std::vector<double>>``::

    {0+24k: ptr {0+8k: double}, 8+24k: ptr {0+8k: double}, 16+24k: ptr {0+8k: double}}
"""

from __future__ import annotations

import weakref
from math import gcd

from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Call, Cast, CmpXchg, GEP, Load, Phi,
                               Ret, Select, Store)
from ..ir.module import Function, GlobalVariable
from ..ir.values import ConstantAggregate, ConstantExpr, ConstantInt, ConstantString
from .types import _MEM, HINTS, is_union, function_of as _function_of, scalar_kinds, tbaa_kind

__all__ = ["MemoryTypes"]

_HINT_BYTES = {"double": 8, "float": 4, "int": 1, "ptr": 8}   # a hint's element size
_MOST_FUNCTIONS = 4000
_SMALL = 64           # instructions: a helper this small is analysed once per call site
                     # (libc++'s std::vector(n) constructor at -O0 is 46)
_DEPTH = 24           # ... up to this many such helpers deep: C++ at -O0 nests them
                     # ten to twenty deep (make_unique, a class's constructor, vector's,
                     # _Vector_base's, _Vector_impl's, the allocator's ...; destroying
                     # them from a vector<unique_ptr>'s reallocation); a helper past the
                     # depth binds every caller's object to its parameters, so two
                     # members built by it make their object periodic
_BUDGET = 200_000     # instructions visited that way, in all
_RTTI = ("_ZTI", "_ZTS")   # C++ type_info objects and type names: no facts from them


def _index(v, depth=8):
    """A GEP index as (c, m): the values it can take are c + m*k (m = 0: exactly c).
    ``gep i8, p, (mul i, 24)`` -- the -O2 spelling of an array of 24-byte structs -- is
    periodic with 24, not with 1."""
    if isinstance(v, ConstantInt):
        return v.value, 0
    c, m = _structural_index(v, depth)
    e = exact_multiple(v) if m else None
    return (0, e) if e and m % e else (c, m)


def _structural_index(v, depth):
    if depth and isinstance(v, BinaryOp):
        op = v.opcode
        if op in ("add", "sub", "or"):
            if op == "or" and "disjoint" not in getattr(v, "flags", ()):
                return 0, 1
            (ca, ma), (cb, mb) = _index(v.operand(0), depth - 1), _index(v.operand(1), depth - 1)
            return (ca - cb if op == "sub" else ca + cb), gcd(ma, mb)
        if op in ("mul", "shl") and isinstance(v.operand(1), ConstantInt):
            k = v.operand(1).value
            k = k if op == "mul" else 1 << k if 0 <= k < 63 else 0
            if k:
                ca, ma = _index(v.operand(0), depth - 1)
                return ca * k, abs(ma * k)
        if op in ("ashr", "lshr") and "exact" in getattr(v, "flags", ()) \
                and isinstance(v.operand(1), ConstantInt) and 0 <= v.operand(1).value < 63:
            # `ashr exact (shl i, 32), 29`: the -O2 spelling of sext(trunc i) * 8
            k = 1 << v.operand(1).value
            ca, ma = _index(v.operand(0), depth - 1)
            if ca % k == 0 and ma % k == 0:
                return ca // k, ma // k
    if depth and isinstance(v, Cast) and v.opcode in ("sext", "zext"):
        return _index(v.operand(0), depth - 1)
    return 0, 1


def exact_multiple(v) -> int | None:
    """A constant ``v`` is known to be a multiple of because some user divides it
    exactly (``ashr exact``/``lshr exact`` by k: 2**k; ``sdiv exact``/``udiv exact`` by
    C: C) -- the byte distance of two pointers into an array of S-byte elements, which
    C and C++ turn into an element count that way (``end - begin`` in ``std::vector``'s
    growth at -O2: ``ashr exact %bytes, 4``); else None."""
    best = None
    for u in v.users:
        if isinstance(u, BinaryOp) and u.operand(0) is v and "exact" in getattr(u, "flags", ()) \
                and isinstance(u.operand(1), ConstantInt):
            k = u.operand(1).value
            m = (1 << k if 0 < k < 32 else None) if u.opcode in ("ashr", "lshr") else \
                abs(k) if u.opcode in ("sdiv", "udiv") and k not in (0, 1, -1) else None
            if m is not None and (best is None or m > best):
                best = m
    return best


def _distance(v):
    """(x, y) where ``v`` is ``ptrtoint x - ptrtoint y`` (through a sign or zero
    extension): the byte distance between two pointers; else None."""
    while isinstance(v, Cast) and v.opcode in ("sext", "zext"):
        v = v.operand(0)
    if isinstance(v, BinaryOp) and v.opcode == "sub":
        a, b = v.operand(0), v.operand(1)
        if all(isinstance(x, Cast) and x.opcode == "ptrtoint" for x in (a, b)):
            return a, b
    return None


def _byte_accesses_only(g, limit=32) -> list:
    """``g`` and the pointers derived from it by constant GEPs and casts, when all their
    other uses read or write single bytes through them (else [])."""
    out, work = [g], [g]
    while work:
        v = work.pop()
        for u in v.uses:
            user = u.user
            if isinstance(user, (Load, Store)) and u.index == (0 if isinstance(user, Load)
                                                                else 1):
                ty = user.type if isinstance(user, Load) else user.operand(0).type
                if not (ty.is_int and ty.width == 8):
                    return []
            elif isinstance(user, Cast) and user.opcode in ("bitcast", "addrspacecast") \
                    or isinstance(user, GEP) and u.index == 0 \
                    and all(isinstance(i, ConstantInt) for i in user.indices):
                if len(out) >= limit:
                    return []
                out.append(user)
                work.append(user)
            else:
                return []
    return out


class _Node:
    """A union-find node.  ``addr(node) = addr(parent) + delta``; a root is a class
    with its period (0: none), facts {offset: {(kind, bytes): {sources}}} (a source is
    the instruction that made the access, None for a declared layout), the facts of
    accesses at offsets not known (``anywhere``: {(kind, bytes): {sources}}) and fields
    {offset: node of the pointee}, offsets taken modulo the period."""

    __slots__ = ("parent", "delta", "period", "facts", "anywhere", "fields", "code")

    def __init__(self, code=False):
        self.parent, self.delta, self.period = None, 0, 0
        self.code = code          # the class holds a function's code
        self.facts: dict[int, dict] = {}
        self.anywhere: dict = {}
        self.fields: dict[int, _Node] = {}


class MemoryTypes:
    """The unification over the module's analysed functions (see the module docstring)."""

    _built: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    _built_all: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, module, values=()) -> MemoryTypes:
        """The analysis of ``module``, built again when one of ``values`` lies in a
        function made since (the AD pass adds functions as it goes).  While the AD pass
        generates derivative code it sets ``module.typetree_scope`` (the program's
        functions at the start): questions about the program are answered from those
        alone -- the derivative functions built so far, which pass primal and shadow
        values side by side, would otherwise merge what the program keeps apart, and the
        answer would depend on the order the call sites' code was generated in; a
        question about a value of a generated function gets an analysis of everything."""
        scope = module.__dict__.get("typetree_scope")
        if scope is not None:
            got = cls._built.get(module)
            if got is None or got._scope is not scope:
                got = cls._built[module] = cls(module, [f for f in scope if f.parent is module])
                got._scope = scope
            if not any(got._unseen(v) for v in values):
                return got
            cache = cls._built_all
        else:
            cache = cls._built
        got = cache.get(module)
        if got is None or getattr(got, "_scope", None) is not None \
                or any(got._unseen(v) for v in values):
            got = cache[module] = cls(module)
        return got

    def _unseen(self, v) -> bool:
        if self._nodes(v):
            return False
        f = _function_of(v)
        return isinstance(f, Function) and f not in self._analysed

    def __init__(self, module, functions=None):
        self._scope = None
        self.module, self.dl = module, module.datalayout
        self._node: dict = {}
        self._bytewise: dict = {}    # byte pointer at an unknown offset -> its base pointer
        self._pending: list = []
        self._returns: dict = {}
        # context-sensitivity for small helpers (``std::forward``, ``std::get``, an
        # accessor): their body is analysed once per call site, as if inlined, with the
        # parameters bound to the arguments' classes -- so the objects of two callers
        # are not merged through them.  ``_inl``: the helpers being analysed that way
        # (function, its values' nodes, the call's node); ``_contexts``: every such
        # binding of a function's values, which queries about them join
        self._inl: list = []
        self._contexts: dict = {}
        self._budget = _BUDGET
        self._sizes: dict = {}
        self._leaves: dict = {}
        self._distances: list = []     # (GEP, pointer, pointer, step): see _gep
        self._copies: list = []        # integer copies: (load, store, source, destination)
        self._source = None     # the instruction whose accesses are being recorded
        if functions is None:
            functions = [f for f in module.functions
                         if f.is_materialized and not f.is_declaration]
        self.functions = self._closure(functions)
        self._analysed = set(self.functions)
        for g in module.global_variables:
            self._global(g)         # declared layouts: facts without a source
        # A small helper whose every use is a direct call from an analysed function is
        # analysed at its call sites only; its body is visited on its own (parameters
        # bound to nothing but the call sites not analysed per call site) only if such
        # a call site turns up -- else its own visit would stand for callers that do
        # not exist, and make every question about it "unknown".
        self._visited: set = set()
        self._needed = [f for f in self.functions if not self._callee_only(f)]
        while self._needed:
            f = self._needed.pop()
            if f in self._visited:
                continue
            self._visited.add(f)
            for inst in f.instructions():
                self._visit(inst)
        self._drain()
        self._distance_periods()

    def _callee_only(self, f) -> bool:
        uses = f.uses
        return bool(uses) and self._size(f) <= _SMALL and all(
            isinstance(u.user, Call) and u.user.called_function is f
            and _function_of(u.user) in self._analysed for u in uses)

    # -- queries ------------------------------------------------------------------------
    def kinds(self, p, offset=0, size=None, exclude=None, text=True) -> set:
        """The kinds of the ``size`` bytes at ``p + offset`` (None: to the end of the
        object); an empty set where nothing is known (or ``p`` was not analysed).  For a
        value of a helper analysed per call site: the kinds in any of its contexts.
        ``exclude``: an access not to count (the one being asked about), or a tuple of
        them (a load and the store that copies its value).  ``text=False``: without
        the single bytes read or written at offsets not known (the characters of a
        string kept inline in the object, ``anywhere``), for a question about the
        fields at fixed offsets beside them."""
        out = set()
        ex = frozenset(exclude if isinstance(exclude, tuple) else
                       () if exclude is None else (exclude,))
        anywhere = p in self._bytewise      # (a byte pointer: at any offset of its class)
        for n in self._nodes(p):
            root, off = self._find(n)
            lo = off + offset
            for o, fs in root.facts.items():
                for (kind, nb), srcs in fs.items():
                    if (not ex or srcs - ex) and (
                            anywhere or self._overlaps(root.period, o, nb, lo, size)):
                        out.add(kind)
            out.update(kind for (kind, nb), srcs in root.anywhere.items()
                       if (not ex or srcs - ex) and (text or kind != "int" or nb != 1))
        return out

    def copied_kinds(self, p, size, exclude=(), offset=0, follow=True) -> set:
        """The kinds the program's own accesses give the ``size`` bytes at ``p + offset``
        and every range that integer copies (a load whose value is stored elsewhere,
        ``c.bits = a.bits``, a record moved as one ``i64``) move those bytes to or
        from, transitively -- the bits of a double put into a ``uint64_t`` field by
        ``memcpy``, copied on as an integer and read back as a double somewhere else.
        Declared layouts (of locals and globals) and the copies' own accesses do not
        count: they say what the bytes are called, not what they hold.  ``exclude``:
        accesses not to count either (the store being asked about); ``follow=False``:
        the bytes at ``p`` alone."""
        edges = self._copy_edges()
        copies = self._copy_insts | set(exclude)
        out, seen = set(), set()
        work = []
        for n in self._nodes(p):
            root, off = self._find(n)
            work.append((root, off + offset))
        while work:
            root, off = work.pop()
            key = (id(root), self._key(root, off))
            if key in seen:
                continue
            seen.add(key)
            for o, fs in root.facts.items():
                for (kind, nb), srcs in fs.items():
                    if any(x is not None and not isinstance(x, Alloca) and x not in copies
                           for x in srcs) and self._overlaps(root.period, o, nb, off, size):
                        out.add(kind)
            for o, n, (other, o2) in edges.get(id(root), ()) if follow else ():
                rel = off - o
                if root.period:
                    rel %= root.period
                if 0 <= rel and rel + size <= n:     # the copy moves these bytes
                    work.append((other, o2 + rel))
        return out

    def _copy_edges(self) -> dict:
        """{id(root): [(offset, bytes, (other root, its offset))]} for the integer copies, both
        ways, over the classes as they are once every unification is done."""
        edges = self.__dict__.get("_edges")
        if edges is None:
            edges, insts = {}, set()
            for ld, st, a, b in self._copies:
                (ra, oa), (rb, ob) = self._find(a), self._find(b)
                n = ld.type.width // 8
                edges.setdefault(id(ra), []).append((oa, n, (rb, ob)))
                edges.setdefault(id(rb), []).append((ob, n, (ra, oa)))
                insts.update((ld, st))
            self._edges, self._copy_insts = edges, insts
        return edges

    def tree(self, p) -> str:
        """What ``p`` points at as a printable byte-offset type tree (offsets from ``p``;
        ``a+Pk`` is offset a in every period of P bytes; ``{...}`` after ``ptr`` is the
        pointee, ``#`` a class already printed above); a helper's value analysed per
        call site shows each distinct tree, joined by `` | ``."""
        shown = []
        for n in self._nodes(p):
            root, off = self._find(n)
            t = self._show(root, off, set())
            if t not in shown and t != "{}":
                shown.append(t)
        return " | ".join(shown) or "{}"

    def is_code(self, p) -> bool:
        """Whether ``p`` points at functions' code only (a function pointer kept in an
        object, passed through a constructor): no derivative lives behind it."""
        roots = [self._find(n)[0] for n in self._nodes(p)]
        return bool(roots) and all(r.code and not r.facts for r in roots)

    def _nodes(self, p) -> list:
        p = self._bytewise.get(p, p)
        out = [self._node[p]] if p in self._node else []
        for ctx in self._contexts.get(_function_of(p), ()):
            if p in ctx:
                out.append(ctx[p])
        return out

    # -- building -------------------------------------------------------------------------
    def _closure(self, functions):
        out, seen = [], set()
        work = list(functions)
        while work and len(out) < _MOST_FUNCTIONS:
            f = work.pop()
            if f in seen or f.is_declaration:
                continue
            seen.add(f)
            out.append(f)
            for inst in f.instructions():
                if isinstance(inst, Call):
                    callee = inst.called_function
                    if callee is not None and callee not in seen:
                        work.append(callee)
        return out

    def node(self, v) -> _Node:
        table = self._node
        if self._inl and _function_of(v) is self._inl[-1][0]:
            table = self._inl[-1][1]
        n = table.get(v)
        if n is None:
            n = table[v] = _Node(code=isinstance(v, Function))
            if isinstance(v, ConstantExpr):
                self._const_expr(v, n)
        return n

    def _tracked(self, v) -> bool:
        """Values that may be pointers: pointer-typed or pointer-sized integers, not
        the null/undef keywords (every null of the module is one Value class)."""
        ty = v.type
        if not (ty.is_pointer or ty.is_int and ty.width == 64):
            return False
        if isinstance(v, ConstantInt) or v.is_constant and not isinstance(
                v, (ConstantExpr, GlobalVariable, Function)):
            return False
        return True

    def _unify(self, a, b, d=0):
        """``a`` and ``b`` (values) point into one class, ``addr(a) = addr(b) + d``."""
        if a in self._bytewise or b in self._bytewise:
            return      # (a cast of a byte pointer: one too, see ``_gep``)
        if self._tracked(a) and self._tracked(b):
            self._pending.append((self.node(a), self.node(b), d))

    def _fact(self, p, offset, kind, n):
        """The access being visited (``_source``) reads or writes ``kind`` at
        ``p + offset``."""
        base = self._bytewise.get(p)
        if base is not None:
            root, _ = self._find(self.node(base))
            root.anywhere.setdefault((kind, n), set()).add(self._source)
        elif self._tracked(p):
            root, off = self._find(self.node(p))
            key = self._key(root, off + offset)
            root.facts.setdefault(key, {}).setdefault((kind, n), set()).add(self._source)

    @staticmethod
    def _add_facts(into: dict, fs: dict):
        for kn, srcs in fs.items():
            into.setdefault(kn, set()).update(srcs)

    def _field(self, p, offset=0) -> _Node:
        root, off = self._find(self.node(p))
        key = self._key(root, off + offset)
        f = root.fields.get(key)
        if f is None:
            f = root.fields[key] = _Node()
        return f

    def _points_to_field(self, v, p):
        """The pointer (or pointer-sized integer) ``v`` is kept at ``p``."""
        if self._tracked(v) and self._tracked(p):
            self._pending.append((self.node(v), self._field(p), 0))

    def _visit(self, inst):
        self._source = inst
        if isinstance(inst, GEP):
            self._gep(inst, inst.operand(0), inst.source_type, inst.indices)
        elif isinstance(inst, Cast):
            self._unify(inst, inst.operand(0))
        elif isinstance(inst, Phi):
            for v, _ in inst.incoming:
                self._unify(inst, v)
        elif isinstance(inst, Select):
            self._unify(inst, inst.operand(1))
            self._unify(inst, inst.operand(2))
        elif isinstance(inst, Alloca):
            if self._tracked(inst):
                self._layout(inst, inst.allocated_type, 0, ints=False)
        elif isinstance(inst, Load):
            self._access(inst, inst.operand(0), inst.type)
            self._points_to_field(inst, inst.operand(0))
        elif isinstance(inst, Store):
            self._access(inst, inst.operand(1), inst.operand(0).type)
            self._points_to_field(inst.operand(0), inst.operand(1))
            v = inst.operand(0)
            if isinstance(v, Load) and v.type.is_int and v.type.width in (32, 64) \
                    and self._tracked(v.operand(0)) and self._tracked(inst.operand(1)):
                self._copies.append((v, inst, self.node(v.operand(0)),
                                     self.node(inst.operand(1))))
        elif isinstance(inst, (AtomicRMW, CmpXchg)):
            self._access(inst, inst.operand(0), inst.operand(1).type)
            self._points_to_field(inst.operand(1), inst.operand(0))
            if isinstance(inst, AtomicRMW):
                self._points_to_field(inst, inst.operand(0))
        elif isinstance(inst, Call):
            self._call(inst)
        elif isinstance(inst, Ret) and inst.value is not None and inst.parent is not None:
            f = inst.parent.parent
            if self._tracked(inst.value):
                if self._inl and self._inl[-1][0] is f:
                    call = self._inl[-1][2]         # analysed at a call site: its result
                    if call is not None:
                        self._pending.append((call, self.node(inst.value), 0))
                else:
                    self._pending.append((self._return_node(f), self.node(inst.value), 0))

    def _return_node(self, f) -> _Node:
        n = self._returns.get(f)
        if n is None:
            n = self._returns[f] = _Node()
        return n

    def _call(self, c):
        name = c.callee_name or ""
        args = c.args
        if name.startswith(_MEM) and len(args) >= 3:
            self._unify(args[0], args[1])     # the bytes at both sides are alike
            return
        if name == "realloc" and args and self._tracked(c) and self._tracked(args[0]):
            self._unify(c, args[0])           # the new block holds what the old one held
            return
        if name in HINTS and args:
            kind = HINTS[name]
            n = _HINT_BYTES[kind]
            size = args[1] if len(args) > 1 else None
            if isinstance(size, ConstantInt) and 0 < size.value <= 1 << 16:
                for o in range(0, size.value, n):
                    self._fact(args[0], o, kind, n)
            elif self._tracked(args[0]):
                self._fact(args[0], 0, kind, n)
                self._periodic(args[0], n)
            return
        callee = c.called_function
        if callee is None or callee.is_declaration:
            return
        if self._per_call_site(callee):
            ctx = {p: self.node(a) for a, p in zip(args, callee.args)
                   if self._tracked(a) and self._tracked(p)}
            self._inl.append((callee, ctx, self.node(c) if self._tracked(c) else None))
            self._contexts.setdefault(callee, []).append(ctx)
            try:
                for inst in callee.instructions():
                    self._visit(inst)
            finally:
                self._inl.pop()
            return
        if callee not in self._visited and callee in self._analysed:
            self._needed.append(callee)     # its parameters stand for this call site
        for a, p in zip(args, callee.args):
            if p.uses:      # an unused parameter says nothing, and would merge the callers'
                self._unify(p, a)       # objects (an empty destructor's ``this``)
        if self._tracked(c):
            self._pending.append((self.node(c), self._return_node(callee), 0))

    def _size(self, f) -> int:
        n = self._sizes.get(f)
        if n is None:
            n = self._sizes[f] = sum(len(b) for b in f.blocks)
        return n

    def _per_call_site(self, f) -> bool:
        """Whether to analyse a call's callee in the call's context (see ``_inl``):
        small, not recursive, within the budget, and not too deep unless it calls no
        defined function (a leaf adds no depth: it cannot multiply the work)."""
        n = self._size(f)
        if n > _SMALL or n > self._budget or any(f is g for g, _, _ in self._inl) \
                or len(self._inl) >= _DEPTH and not self._is_leaf(f):
            return False
        self._budget -= n
        return True

    def _is_leaf(self, f) -> bool:
        leaf = self._leaves.get(f)
        if leaf is None:
            leaf = self._leaves[f] = not any(
                isinstance(i, Call) and i.called_function is not None
                and not i.called_function.is_declaration for i in f.instructions())
        return leaf

    def _gep(self, g, base, source_type, indices):
        """``g = base + c + i*s...``: one class, periodic with each variable stride."""
        dl, ty = self.dl, source_type
        c, strides, distances = 0, [], []
        try:
            for k, i in enumerate(indices):
                if k == 0:
                    step = dl.size_in_bytes(ty)
                elif ty.is_struct:
                    if not isinstance(i, ConstantInt):
                        return
                    c += dl.field_offsets(ty)[i.value]
                    ty = ty.elements[i.value]
                    continue
                else:
                    ty = ty.element
                    step = dl.size_in_bytes(ty)
                d = _distance(i) if step else None
                if d is not None and exact_multiple(i) is None:
                    # ``result + (last - first)`` (a relocation at -O0): a multiple of
                    # the period of the class ``first`` and ``last`` point into, known
                    # only once every class has its period (``_distance_periods``)
                    distances.append((d, step))
                    continue
                ci, mi = _index(i)
                c += ci * step
                if mi:
                    strides.append(mi * step)
        except (AttributeError, IndexError, TypeError, ValueError):
            return     # an unusual type: the GEP is not followed (its class knows less)
        if not (self._tracked(g) and self._tracked(base)) or base in self._bytewise:
            return
        if strides and all(s == 1 for s in strides):
            derived = _byte_accesses_only(g)
            if derived:
                for v in derived:
                    self._bytewise[v] = base
                return
        self._unify(g, base, c)
        if source_type.is_float or source_type.is_pointer:
            self._fact(g, 0, *self._scalar(source_type))
        for s in strides:
            self._periodic(g, s)
        for (a, b), step in distances:
            if self._tracked(a) and self._tracked(b):
                self._distances.append((self.node(g), self.node(a), self.node(b), step))
            else:
                self._periodic(g, step)

    def _distance_periods(self):
        """The strides of GEPs by a distance between two pointers (``_gep``): the
        period of their class where both lie at one offset in it (the distance is a
        whole number of its elements), else 1 -- until no class's period changes."""
        changed = True
        while changed:
            changed = False
            for g, a, b, step in self._distances:
                ra, oa = self._find(a)
                rb, ob = self._find(b)
                P = ra.period
                same = ra is rb and ((oa - ob) % P == 0 if P else oa == ob)
                s = (P if same else 1) * step
                r, _ = self._find(g)
                if s and gcd(r.period, s) != r.period:
                    self._set_period(r, gcd(r.period, s))
                    self._drain()
                    changed = True

    def distance_period(self, v) -> int | None:
        """The element size S where ``v`` is the byte distance between two pointers at
        one offset of a class with period S (``end - begin`` of an array of S-byte
        records, a memmove's byte count), in every context; else None."""
        d = _distance(v)
        if d is None:
            return None
        got = set()
        for na, nb in zip(self._nodes(d[0]), self._nodes(d[1])):
            ra, oa = self._find(na)
            rb, ob = self._find(nb)
            if ra is not rb or not ra.period or (oa - ob) % ra.period:
                return None
            got.add(ra.period)
        return got.pop() if len(got) == 1 else None

    def _periodic(self, v, stride):
        self._drain()
        root, _ = self._find(self.node(v))
        self._set_period(root, gcd(root.period, abs(stride)) if stride else 1)
        self._drain()

    def _const_expr(self, e, n):
        if e.opcode == "getelementptr" and e.operands:
            self._gep(e, e.operand(0), e.source_type, e.operands[1:])
        elif e.opcode in ("bitcast", "addrspacecast", "ptrtoint", "inttoptr") and e.operands:
            self._unify(e, e.operand(0))

    def _global(self, g):
        if g.is_declaration or g.initializer is None:
            return
        if g.name.startswith(_RTTI):
            # a C++ type_info object: std::function's manager stores its address and
            # the functor's in one slot of std::_Any_data, which unifies them; its two
            # pointers would then pass for the functor's contents (three doubles)
            return
        self._layout(g, g.value_type, 0, ints=True)
        self._initialiser(g, g.initializer, 0)

    def _initialiser(self, g, v, off):
        """Pointers in a global's initialiser: the field at their offset is their class."""
        ty = v.type
        if ty.is_pointer and self._tracked(v):
            self._pending.append((self.node(v), self._field(g, off), 0))
        elif isinstance(v, ConstantAggregate) and not isinstance(v, ConstantString):
            if ty.is_struct:
                offs = self.dl.field_offsets(ty)
                for e, o in zip(v.operands, offs):
                    self._initialiser(g, e, off + o)
            elif ty.is_array or ty.is_vector:
                step = self.dl.size_in_bytes(ty.element)
                for k, e in enumerate(v.operands[:4096]):
                    self._initialiser(g, e, off + k * step)

    def _layout(self, p, ty, off, ints):
        """Facts from a declared type (an alloca's, a global's); byte arrays of an
        alloca say nothing (SROA and clang make `[N x i8]` locals of any content)."""
        if ty.is_struct and not getattr(ty, "is_opaque", False):
            if is_union(ty):
                return      # which member is live is not the declared type's to say
            for e, o in zip(ty.elements, self.dl.field_offsets(ty)):
                self._layout(p, e, off + o, True)
        elif ty.is_array or ty.is_vector:
            if ty.element.is_int and ty.element.width == 8 and not ints:
                return
            step = self.dl.size_in_bytes(ty.element)
            for k in range(min(ty.count, 256)):
                self._layout(p, ty.element, off + k * step, True)
        elif ty.is_float or ty.is_pointer or ty.is_int:
            self._fact(p, off, *self._scalar(ty))

    def _scalar(self, ty):
        """(kind, bytes) of a scalar type, the kinds named as ``types.scalar_kinds``
        names them."""
        return next(iter(scalar_kinds(ty, set()))), self.dl.store_size(ty)

    def _access(self, inst, p, ty):
        if ty.is_int:
            k = tbaa_kind(inst, self.module)
            if k is not None and k != "int":
                self._fact(p, 0, k, self.dl.store_size(ty))
                return
        if ty.is_struct or ty.is_array or ty.is_vector:
            self._layout(p, ty, 0, ints=True)
        elif ty.is_float or ty.is_pointer or ty.is_int:
            self._fact(p, 0, *self._scalar(ty))

    # -- union-find ------------------------------------------------------------------
    def _find(self, n):
        path = []
        while n.parent is not None:
            path.append(n)
            n = n.parent
        acc = 0
        for x in reversed(path):
            acc += x.delta
            x.parent, x.delta = n, acc
        return n, (path[0].delta if path else 0)

    @staticmethod
    def _key(root, off):
        return off % root.period if root.period else off

    def _drain(self):
        while self._pending:
            a, b, d = self._pending.pop()
            ra, oa = self._find(a)
            rb, ob = self._find(b)
            s = oa - d - ob          # base(rb) = base(ra) + s
            if ra is rb:
                if s and (not ra.period or s % ra.period):
                    self._set_period(ra, gcd(ra.period, abs(s)))
                continue
            if len(ra.facts) + len(ra.fields) < len(rb.facts) + len(rb.fields):
                ra, rb, s = rb, ra, -s
            rb.parent, rb.delta = ra, s
            ra.code = ra.code or rb.code
            facts, fields, period = rb.facts, rb.fields, rb.period
            rb.facts, rb.fields, rb.period = {}, {}, 0
            for o, fs in facts.items():
                self._add_facts(ra.facts.setdefault(self._key(ra, o + s), {}), fs)
            self._add_facts(ra.anywhere, rb.anywhere)
            rb.anywhere = {}
            for o, f in fields.items():
                self._put_field(ra, self._key(ra, o + s), f)
            if period:
                self._set_period(ra, gcd(ra.period, period))

    def _put_field(self, root, key, f):
        have = root.fields.get(key)
        if have is None:
            root.fields[key] = f
        elif have is not f:
            self._pending.append((have, f, 0))

    def _set_period(self, root, period):
        if period == root.period:
            return
        root.period = period
        facts, fields = root.facts, root.fields
        root.facts, root.fields = {}, {}
        for o, fs in facts.items():
            self._add_facts(root.facts.setdefault(o % period, {}), fs)
        for o, f in fields.items():
            self._put_field(root, o % period, f)

    @staticmethod
    def _overlaps(period, o, n, lo, size):
        if not period:
            return o + n > lo and (size is None or o < lo + size)
        if size is None or size >= period:
            return True
        start = (lo - o) % period    # where the range begins, seen from the fact
        return start < n or start + size > period

    # -- printing ------------------------------------------------------------------------
    def _show(self, root, off, seen) -> str:
        if root in seen:
            return "#"
        seen = seen | {root}
        P = root.period
        keys = sorted(set(root.facts) | set(root.fields),
                      key=lambda o: (o - off) % P if P else o - off)
        parts = []
        for o in keys:
            rel = (o - off) % P if P else o - off
            where = f"{rel}+{P}k" if P else str(rel)
            kinds = sorted({k for k, _ in root.facts.get(o, ())})
            text = f"{where}: {'|'.join(kinds) or '?'}"
            f = root.fields.get(o)
            if f is not None:
                fr, foff = self._find(f)
                if fr.facts or fr.fields:
                    text += " " + self._show(fr, foff, seen)
            parts.append(text)
        if root.anywhere:
            parts.append(f"*: {'|'.join(sorted({k for k, _ in root.anywhere}))}")
        return "{" + ", ".join(parts) + "}"
