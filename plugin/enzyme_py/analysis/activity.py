"""Activity analysis: which values carry derivatives.

Forward ("down") reasoning from the active arguments: a float-typed value is
active if it depends on an active value or is loaded from memory with a shadow;
a pointer is *shadowed* (has a shadow pointer) if it derives from a duplicated
argument, a local/heap allocation, or is loaded from shadowed memory.  A local
variable whose address never escapes (the allocas of unoptimised code) is
followed exactly: pointers loaded from it are shadowed only if a shadowed pointer
is stored into it, and it gets a shadow itself only if it holds floating-point
values or shadowed pointers -- a pointer to constant data kept in a local (a
global's pointer, an ``enzyme_const`` argument at -O0) stays without a shadow
instead of making its primal memory look like one.  Such a local is followed field by
field, by byte offset, also through the callees it is passed to (``_param_summary``)
and into a by-value parameter's copy: a field that holds only pointers without a
shadow beside fields that hold pointers with one (a C++ ``[&]`` closure over an
``enzyme_const`` and a duplicated vector, a cursor struct) gives loads without a shadow,
and callees get such fields as ``const_fields``.  Records copied whole into a local
(``memcpy``: a record inserted into a list by value, a struct copied by a helper, a
swap through a temporary) bring the pointers their source holds at those bytes
(``_Slot.moved_in``, ``Activity.copied_pointers``); a copy out of a local is judged
where it lands (``ad.errors.check_const_pointers_copied``).  A local whose address is kept in
another such local (a params struct in a ``gsl_function {function, params}``) is
followed too, through what the callees do with the pointer they load from there
(``_follow_held``); its constant fields reach them as paths of offsets
(``(argument, 8, 0)``: field 0 of the memory the pointer at offset 8 points to).
A call to a defined function returns a shadowed pointer if the callee, analysed
with the same activity, may return one (a shadowed argument, or memory it
allocates: ``xmalloc`` wrappers).  What calls do comes from the call-effects table (``effects.py``).
Every instruction kind is classified (atomics: active through their memory and
value; ``va_arg`` of a float or pointer: assumed to carry a derivative, which the
generators refuse).

Backward ("up") reasoning then keeps only the values whose derivative can matter:
a floating-point value stays active if it reaches an *output* through
floating-point arithmetic (binary and unary operators, casts, phis, selects,
aggregate and vector element operations, calls of pure math functions, inline
assembly without memory effects): a store
(into any memory), an argument of any other call, an atomic operation, or the
return value when the caller asks for its derivative (``ret_active``).  A value
whose only uses are comparisons, conversions to integers or other values that
reach no output -- a convergence test ``fabs(x1 - x0) < tol``, an error estimate
the caller only compares -- is dropped from ``active``: the generators emit no
derivative code for it and cache nothing for its rule.  Memory the same way: a
local variable that holds no pointers and whose address goes nowhere but loads and
stores here (the allocas of -O0 code) needs a shadow only if a value loaded from it
reaches an output; a store into it is an output only then.  Such locals lose their
shadow (``unshadowed_locals``: the generators store active values into them without
complaint).  A local used only on paths that return no more (they end in a throw or
``abort()``: an exception's message built in a ``std::string``) needs no shadow
either, nor does a ``va_list`` through which only integers (and pointers that touch
no floats) are read, or which only goes to ``vfprintf`` & co.  Function arguments stay
as the caller declared them; other memory keeps its shadow.

A block (a ``malloc``, a local array) merged by a phi or select only with pointers
that have no shadow, and used only to load, store, memset, compare and free, is
assumed to receive no derivative (optional weights: ``w = w_in ? w_in : ones``); the
forward reasoning is redone, and a block into which an active value is stored after
all gets its shadow back.  ``write_only_argument`` says which arguments without a
shadow a function only stores into (an optional output passed as NULL).

A phi or select that chooses between a pointer without a shadow and pointers with one
(``in = x`` then ``in = acts``) is accepted when what it yields is only read (and
stored integers through: ``_own_merges``): its shadow is the primal pointer where the constant
data is chosen, and the generators check each access at run time (``own_ptrs``).

The result is read-only; ``str(result)`` lists the active values per block and
the ones backward reasoning dropped.
"""

from __future__ import annotations

from ..ir.instructions import (Alloca, AtomicRMW, Call, Cast, CmpXchg, ExtractElement,
                               ExtractValue, GEP, InsertElement, InsertValue, Load, Phi, Ret,
                               Select, ShuffleVector, Store, BinaryOp, UnaryOp, Freeze, VAArg,
                               FCmp, ICmp)
from ..ir.values import Argument
from ..ir.walk import BoundedWalk
from .effects import (ALLOC_NAMES, FREE_NAMES, call_effect, mem_intrinsic, pure_inline_asm,
                      text_only)

__all__ = ["Activity", "ALLOC_FUNCS", "FREE_FUNCS", "floatish", "struct_return_origin",
           "constant_leaves", "underlying_object", "pointer_aggregate", "code_pointer",
           "doomed_blocks"]

ALLOC_FUNCS = ALLOC_NAMES   # see effects.py: the one table of what calls do
FREE_FUNCS = FREE_NAMES
# calls whose results never carry derivatives (see effects.py)
_NO_DERIVATIVE_RESULT = ("inactive", "writes", "alloc", "free", "memcpy", "memmove", "memset",
                         "nomem", "typehint", "omp", "mirror")


def _contains(ty, leaf) -> bool:
    """Whether ``ty`` is, or has among its elements (vector, array, struct), a type
    for which ``leaf`` holds."""
    if leaf(ty):
        return True
    if ty.is_vector or ty.is_array:
        return _contains(ty.element, leaf)
    if ty.is_struct:
        return any(_contains(t, leaf) for t in ty.elements)
    return False


def floatish(ty) -> bool:
    """Whether values of ``ty`` hold floating-point data."""
    return _contains(ty, lambda t: t.is_float)


def has_pointer(ty) -> bool:
    """Whether values of ``ty`` hold pointers."""
    return _contains(ty, lambda t: t.is_pointer)


def pointer_aggregate(ty) -> bool:
    """A struct or array of pointers (and integers), no floating-point values: a value
    that may carry shadows, like ``std::pair<node *, node *>`` returned in registers.
    Its shadow has the same type (shadow pointers where the primal has pointers, the
    primal integers elsewhere)."""
    return (ty.is_struct or ty.is_array) and has_pointer(ty) and not floatish(ty)


def underlying_object(v, limit=64):
    """Strip GEPs and casts (not phis) to the pointer's base."""
    while limit:
        limit -= 1
        if isinstance(v, GEP):
            v = v.operand(0)
        elif isinstance(v, Cast) and v.opcode in ("bitcast", "addrspacecast"):
            v = v.operand(0)
        else:
            return v
    return v


class Activity:
    """``kinds[i]`` for argument i: ``"const"``, ``"dup"`` (pointer with shadow) or
    ``"out"`` (active by-value float)."""

    def __init__(self, fn, kinds, inactive=(), _outer=(), shadow_globals=(),
                 ret_active=True, const_fields=frozenset(), own_args=frozenset(),
                 entry=False, null_args=frozenset()):
        self.fn = fn
        # the function a call site differentiates (its enzyme_const outputs are its
        # caller's: ``write_only_argument``)
        self.entry = entry
        # the pointer parameters every call in the derivative passes as NULL (optional
        # outputs not asked for: their stores never run)
        self.null_args = null_args
        # arguments whose shadow may be the primal memory (``_own_merges``)
        self.own_args = own_args
        self.own_merges = self.own_ptrs = self.own_sources = frozenset()
        # (argument index, byte offset): pointers stored there in the memory the
        # argument points to have no shadow (``callee_const_fields``)
        self.const_fields = const_fields
        self.inactive_fns = inactive  # names of functions whose calls carry no derivative
        self.active: set = set()      # float-typed values with adjoints
        self.shadowed: set = set()    # pointers with shadows
        # globals with shadow globals (analysis/globals.py), and constant GEPs of them
        self.shadow_globals = shadow_globals
        self._touches: dict = {}
        if shadow_globals:
            from .globals import global_base
            self.shadowed.update(shadow_globals)
            for b in fn.blocks:
                for i in b.instructions:
                    for o in i.operands:
                        if o.type.is_pointer and not o.is_instruction and \
                                global_base(o) in shadow_globals:
                            self.shadowed.add(o)
        self._key = (fn, tuple(kinds), const_fields, own_args)
        self._outer = _outer + (self._key,)  # (fn, kinds) being analysed (recursion)
        self._callee_ret: dict = {}
        self._in_record: set = set()      # (``copied_pointers`` in progress)
        self._whole = False
        # non-escaping locals -> the values stored into them
        self.slots = _local_slots(fn)
        self._inert: frozenset = frozenset()
        insts = [i for b in fn.blocks for i in b.instructions]
        seed = (set(self.active), set(self.shadowed))
        self._forward(fn, kinds, insts, seed)
        self._drop_inert_blocks(fn, kinds, insts, seed)
        # values active by forward reasoning whose derivative reaches no output
        self.pruned: set = self._prune(insts, ret_active)
        self.active -= self.pruned
        self.own_merges, self.own_ptrs = self._own_merges(insts)
        # the pointers without a shadow those merges choose: their "shadow" is themselves
        self.own_sources = frozenset(
            v for m in self.own_merges
            for v in m.merged
            if v not in self.shadowed and (v.is_instruction or isinstance(v, Argument)))

    def _own_merges(self, insts):
        """Phis and selects choosing between a pointer without a shadow (an
        ``enzyme_const`` input) and pointers with one: a layer loop's ``in = x`` then
        ``in = acts + l*N``.  The merge's shadow takes the primal pointer where the
        chosen one has no shadow -- the memory is then its own "shadow" -- and every
        access through the merge (``own_ptrs``: it and the pointers derived from it, and
        the arguments a caller passes such a pointer for: ``own_args``) checks at run
        time whether its shadow is the primal address: there, a tangent or adjoint read
        is zero and nothing is written (a zeroed scratch slot takes the access
        instead).  Only when those pointers are only loaded from (values without
        pointers, at most 64 bytes), stored through (integers: a floating-point value
        written where the constant data is chosen would lose its derivative), compared,
        offset, merged or passed to defined functions that do the same; else the merge
        stays "mixed" (a compile error)."""
        merges, ptrs = set(), set()
        dl = self.fn.parent.datalayout
        seeds = [a for a in self.fn.args if a.index in self.own_args and a in self.shadowed]
        for m in insts:
            if isinstance(m, (Phi, Select)) and m.type.is_pointer and m in self.shadowed:
                vals = m.merged
                if any(v not in self.shadowed and (v.is_instruction or isinstance(v, Argument))
                       for v in vals):
                    seeds.append(m)
        for m in seeds:
            if m in ptrs:
                continue
            # floating-point values may be written through the merge where the memory
            # without a shadow is an enzyme_const output of the function differentiated
            # that nothing here reads back (``if (vel) vel[i] = ...``, its store merged
            # with the one to ``pos[i]`` by -O2), or an optional output of a helper every
            # call passes as NULL: what lands there carries no derivative
            vals = m.merged if isinstance(m, (Phi, Select)) else []
            floats = bool(vals) and all(
                v in self.shadowed or isinstance(v, Argument) and (
                    v.index in self.null_args
                    or self.entry and self.write_only_argument(v))
                for v in vals if v.is_instruction or isinstance(v, Argument))
            derived = _own_uses(m, dl, floats=floats)
            if derived is not None:
                ptrs |= derived
                merges |= {d for d in derived if isinstance(d, (Phi, Select))}
        return frozenset(merges), frozenset(ptrs)

    def callee_own_args(self, args) -> frozenset:
        """For a call with ``args``: the indices of those whose shadow may be the
        primal memory (``_own_merges``); the callee's derivative checks its accesses."""
        if not self.own_ptrs:
            return frozenset()
        return frozenset(k for k, a in enumerate(args) if a in self.own_ptrs)

    def _forward(self, fn, kinds, insts, seed) -> None:
        """Forward reasoning (module docstring) from the arguments, to a fixed point."""
        self.active, self.shadowed = set(seed[0]), set(seed[1])
        self._callee_ret = {}
        for a, k in zip(fn.args, kinds):
            if k == "dup" and a.type.is_pointer:
                self.shadowed.add(a)
            elif k in ("out", "dup") and floatish(a.type):
                self.active.add(a)
        changed = True
        while changed:
            changed = False
            for i in insts:
                if i in self.active or i in self.shadowed:
                    continue
                kind = self._classify(i)
                if kind == "active":
                    self.active.add(i)
                    changed = True
                elif kind == "shadow":
                    self.shadowed.add(i)
                    changed = True

    def _drop_inert_blocks(self, fn, kinds, insts, seed) -> None:
        """Blocks (a ``malloc``, a local array) into which nothing active is ever stored,
        merged by a phi or select with pointers that have no shadow: optional weights
        ``w = w_in ? w_in : uniform`` with ``w_in`` an ``enzyme_const`` argument and
        ``uniform`` a buffer of ones.  Such a block's derivative is zero throughout, so
        it needs no shadow -- and without one, the merge has none either (instead of
        "mixed").  Assume each such block inert, redo the forward reasoning, and take
        back the blocks into which an active value (or a pointer with a shadow) is
        stored after all; repeat until none is."""
        blocks = {}
        for i in insts:
            if i in self.shadowed and (isinstance(i, Alloca)
                                       or isinstance(i, Call) and _fresh_block(i)):
                derived = _inert_candidate(i, self.shadowed)
                if derived is not None:
                    blocks[i] = derived
        while blocks:
            self._inert = frozenset().union(*blocks.values())
            self._forward(fn, kinds, insts, seed)
            taken_back = [b for b, derived in blocks.items() if any(
                isinstance(u.user, Store) and u.index == 1
                and (u.user.operand(0) in self.active or u.user.operand(0) in self.shadowed)
                for p in derived for u in p.uses)]
            if not taken_back:
                return
            for b in taken_back:
                del blocks[b]
        if self._inert:
            self._inert = frozenset()
            self._forward(fn, kinds, insts, seed)

    def _prune(self, insts, ret_active) -> set:
        """The active instructions from which no output is reachable (module
        docstring), and the local variables and blocks whose shadow nothing needs: a
        local (alloca) or a block this function allocates that holds no pointers and is
        used only here (loads, stores; ``free``) needs a shadow only if a value loaded
        from it reaches an output.  Assume none does; take back the ones with such a
        load; repeat until nothing changes."""
        quiet = {}
        for a in [a for a, st in self.slots.items()
                  if not st.ptrs and not st.loaded and not st.copies and not st.moved_in] + [
                i for i in insts if isinstance(i, Call) and _fresh_block(i)]:
            if a in self.shadowed:
                derived = _derived_pointers(a)
                # (a local read as integers keeps its shadow: the bits may be floats
                # that integer operations carry on -- a sign mask on SIMD lanes --
                # which this walk over float values does not follow)
                if derived is not None and not any(
                        isinstance(u, Load) and _int_bits(u.type)
                        for p in derived for u in p.users):
                    quiet[a] = derived
        while True:
            inner = set().union(*quiet.values())
            useful = self._useful(insts, ret_active, inner)
            needed = [a for a, ps in quiet.items()
                      if any(isinstance(u, Load) and u in useful for p in ps for u in p.users)]
            if not needed:
                break
            for a in needed:
                del quiet[a]
        self.unshadowed_locals = frozenset(inner)   # and the pointers derived from them
        self.locals_without_shadow = list(quiet)
        self.shadowed -= inner
        return {i for i in insts if i in self.active and i not in useful}

    def _useful(self, insts, ret_active, quiet) -> set:
        """The active values from which an output is reachable; stores into ``quiet``
        (pointers into locals assumed to need no shadow) are not outputs."""
        useful: set = set()
        work = []

        def mark(v):
            if v in self.active and v not in useful:
                useful.add(v)
                work.append(v)

        for i in insts:
            if _role(i, self.inactive_fns) != "output" \
                    or isinstance(i, Ret) and not ret_active \
                    or isinstance(i, Store) and i.operand(1) in quiet:
                continue
            for o in i.operands:
                mark(o)
        while work:
            v = work.pop()
            if isinstance(v, Phi):
                for x, _ in v.incoming:
                    mark(x)
            elif v.is_instruction and _role(v, self.inactive_fns) == "transform":
                for o in v.operands:
                    mark(o)
        return useful

    def _any_active(self, ops):
        return any(o in self.active for o in ops)

    def _classify(self, i):
        if i in self._inert:
            return None
        ty = i.type
        ops = i.operands
        if pointer_aggregate(ty) or ty.is_pointer and isinstance(i, ExtractValue):
            if isinstance(i, ExtractValue) and ops[0] in self.shadowed:
                return "shadow"
            # (an ExtractValue from an aggregate without a shadow: a struct mixing
            # pointers and floats returned by a callee, see below)
            if isinstance(i, InsertValue):
                return "shadow" if ops[0] in self.shadowed or ops[1] in self.shadowed \
                    else None
        if ty.is_pointer and isinstance(i, (Load, Phi, Select, Cast)) and code_pointer(i):
            return None     # a function called through it: code, its own "shadow"
        if ty.is_pointer or pointer_aggregate(ty):
            if isinstance(i, Alloca):
                st = self.slots.get(i)
                if st is None:
                    return "shadow" if _alloca_may_hold_float(i) \
                        and not self._used_on_doomed_paths(i) \
                        and not _va_list_without_derivatives(i) else None
                # (bytes copied in from memory with a shadow: floats among them)
                return "shadow" if st.floats or st.holds_shadowed(self) \
                    or any(p in self.shadowed for p, *_ in st.moved_in) else None
            if isinstance(i, Cast) and i.opcode == "inttoptr":
                return "shadow" if address_source(i, self) in self.shadowed else None
            if isinstance(i, (GEP, Cast)):
                return "shadow" if ops[0] in self.shadowed else None
            if isinstance(i, (Phi, Select)):
                vals = i.merged
                return "shadow" if any(v in self.shadowed for v in vals) else None
            if isinstance(i, Load):
                return "shadow" if ops[0] in self.shadowed \
                    and self.may_hold_shadowed_pointers(ops[0]) else None
            if isinstance(i, Call):
                name = i.callee_name or ""
                if name in self.inactive_fns:
                    return None
                eff = call_effect(name)
                if eff is not None and eff.kind == "alloc" and eff.out is None:
                    return "shadow"
                if eff is not None and eff.kind == "mirror":
                    return "shadow" if any(a in self.shadowed for a in i.args) else None
                if eff is not None and eff.kind in _NO_DERIVATIVE_RESULT:
                    return None
                # a defined callee: whatever it may return with a shadow (a pointer
                # argument's, or a fresh allocation: xmalloc, a node constructor)
                callee = i.called_function
                if callee is not None and not callee.is_declaration \
                        and self._returns_shadow(callee, i.args):
                    return "shadow"
                return None
            if isinstance(i, ExtractValue) and isinstance(ops[0], Call) \
                    and not pointer_aggregate(ops[0].type):
                # a pointer returned inside a struct beside floats: the generators have
                # no shadow for it and refuse, where the callee may return a shadowed
                # one (a struct of pointers has its shadow as a whole: see above)
                callee = ops[0].called_function
                name = ops[0].callee_name or ""
                if callee is not None and not callee.is_declaration \
                        and name not in self.inactive_fns \
                        and self._returns_shadow(callee, ops[0].args, aggregate=True):
                    return "shadow"
                return None
            if isinstance(i, AtomicRMW):   # xchg of pointers
                return "shadow" if ops[0] in self.shadowed or ops[1] in self.shadowed else None
            if isinstance(i, VAArg):
                return "shadow"  # may come with a shadow from the caller: generators refuse
            return None
        if isinstance(i, CmpXchg):
            # {value, i1}: integers or pointers; the generators check what the memory holds
            return None
        if not floatish(ty):
            return None
        if isinstance(i, Load):
            return "active" if ops[0] in self.shadowed else None
        if isinstance(i, AtomicRMW):
            return "active" if ops[0] in self.shadowed or ops[1] in self.active else None
        if isinstance(i, VAArg):
            return "active"  # the caller's value may carry a derivative: generators refuse
        if isinstance(i, Call):
            name = i.callee_name or ""
            if name in self.inactive_fns:
                return None
            eff = call_effect(name)
            if eff is not None and eff.kind in _NO_DERIVATIVE_RESULT:
                return None
            args = i.args
            if self._any_active(args) or any(a in self.shadowed for a in args) \
                    or self.touches_shadow_globals(i):
                return "active"
            return None
        if isinstance(i, (BinaryOp, UnaryOp, Cast, Select, ExtractValue, InsertValue,
                          ExtractElement, InsertElement, ShuffleVector, Freeze)):
            return "active" if self._any_active(ops) else None
        if isinstance(i, Phi):
            return "active" if self._any_active([v for v, _ in i.incoming]) else None
        return None

    def involved(self, call) -> bool:
        """Whether derivative code concerns ``call``: an argument or its result carries
        a derivative or a shadow, or it touches globals with a shadow -- for a call that
        only computes its result (``effects.pure_inline_asm``), only where that result
        is active: with its operands active but its result only compared, it runs as
        the program's."""
        if pure_inline_asm(call):
            return call in self.active
        return (any(a in self.active or a in self.shadowed for a in call.args)
                or call in self.active or call in self.shadowed
                or self.touches_shadow_globals(call))

    def write_only_argument(self, p, merges=True) -> bool:
        """Whether ``p`` points into an argument without a shadow that this function only
        stores values without pointers into (or copies memory into), or compares: an
        output the caller passed with ``enzyme_const`` (or as NULL: ``if (nrm) *nrm =
        ...``).  Nothing here reads
        it back (or only into itself: a running statistic), so what is stored there
        carries no derivative anywhere -- for the function a call site differentiates
        (a callee's caller might read it).  ``merges``: through the phis and selects
        of it too (-O2 merges the store to ``vel[i]`` with the one to ``pos[i]``)."""
        base = underlying_object(p)
        if not (getattr(base, "is_argument", False) and base.parent is self.fn
                and base not in self.shadowed):
            return False
        derived: set = set()
        loads = []
        for u in address_uses(base, derived, merges):
            user = u.user
            if isinstance(user, Store) and u.index == 1 and not has_pointer(user.operand(0).type):
                continue
            if isinstance(user, Call) and u.index == 0 and _copy_into(user):
                continue        # a copy into it (recording a trajectory)
            if isinstance(user, Load) and u.index == 0 and not has_pointer(user.type):
                loads.append(user)
                continue
            if not (isinstance(user, ICmp) or _marker(user)):
                return False
        # what it reads back goes only into itself (a running statistic updated in
        # place: ``rm[i] = 0.9f * rm[i] + 0.1f * mean``), or into comparisons
        return all(self._only_into(x, derived) for x in loads)

    def _only_into(self, v, derived, limit=64) -> bool:
        """Whether the value ``v`` flows (through arithmetic, casts, phis, selects and
        pure math calls) only into stores to the pointers ``derived``, or comparisons."""
        walk = BoundedWalk(v, limit)
        for x in walk:
            for u in x.uses:
                user = u.user
                if getattr(user, "is_debug_use", False) or isinstance(user, (ICmp, FCmp)):
                    continue
                if isinstance(user, Store):
                    if u.index != 0 or user.operand(1) not in derived:
                        return False
                elif _role(user, self.inactive_fns) == "transform" \
                        and not (isinstance(user, Select) and u.index == 0):
                    walk.add(user)
                else:
                    return False
        return not walk.exceeded

    def touches_shadow_globals(self, call) -> bool:
        """Whether ``call`` (of a defined function, or through a pointer: of any
        function it may reach) reads or writes a global that has a shadow global: it
        carries derivatives whatever its arguments."""
        if not self.shadow_globals:
            return False
        from .callgraph import indirect_targets, is_indirect
        from .globals import touches
        callee = call.called_function
        if callee is None and is_indirect(call):
            return any(touches(t, self.shadow_globals, self._touches)
                       for t in indirect_targets(self.fn.parent, call))
        return touches(callee, self.shadow_globals, self._touches)

    def _used_on_doomed_paths(self, a) -> bool:
        """Whether every use of the local ``a`` (through its GEPs and casts) is on a
        path that returns no more (``doomed_blocks``: the message of an exception
        built in a ``std::string`` before a throw): its contents never reach a
        derivative, so it needs no shadow."""
        doomed = self.__dict__.get("_doomed")
        if doomed is None:
            doomed = self._doomed = doomed_blocks(a.parent.parent)
        if not doomed:
            return False
        walk = BoundedWalk(a, 64)
        for x in walk:
            for u in x.uses:
                user = u.user
                if getattr(user, "is_debug_use", False) or _marker(user):
                    continue
                if user.parent not in doomed:
                    return False
                if isinstance(user, (GEP, Cast)):
                    walk.add(user)
        return not walk.exceeded

    def may_hold_shadowed_pointers(self, p, at=0) -> bool:
        """Whether a pointer loaded through ``p`` (shadowed memory) -- ``at`` bytes past
        it; None: anywhere there -- may have a shadow: False for a non-escaping local
        into which no shadowed pointer is stored, and for a field of one (or of the
        memory an argument points to: ``const_fields``) that holds only pointers
        without a shadow."""
        if not (self.const_fields or self.slots):
            return True
        fields = self._pointer_fields(p)
        if (None,) in fields or at is not None and (at,) in fields:
            return False
        base, off = base_offset(p, self.fn.parent.datalayout)
        st = self.slots.get(base)
        return st is None or st.holds_shadowed(self, None if off is None or at is None
                                               else off + at)

    def unshadowed_fields(self, p) -> set:
        """The byte offsets from ``p`` of the fields of the memory it points to that hold
        only pointers without a shadow (None: every field; ``_pointer_fields``)."""
        return {f[0] for f in self._pointer_fields(p) if len(f) == 1}

    def copied_pointers(self, p, at, o, n):
        """For ``n`` bytes (None: not known) copied from offset ``at`` of the memory
        ``p`` points to into a local at offset ``o`` (``_Slot.moved_in``): (offset in
        the local or None, whether it may have a shadow, whether it is a pointer of the
        program without one) for the pointers among them -- those the local ``p``
        points into holds there (``_Slot._entries``).  Where locals are copied into
        each other (a swap through a temporary), each is taken whole, at no offset."""
        outermost = not self._in_record
        try:
            return list(self._copied(p, at, o, n, self._whole))
        except _CopyCycle:
            if not outermost:
                raise
            self._whole = True
            try:
                return list(self._copied(p, at, o, n, True))
            finally:
                self._whole = False

    def _copied(self, p, at, o, n, whole):
        unknown = (None, True, False)
        if p not in self.shadowed:
            yield None, False, True     # (memory without a shadow: constant data)
            return
        base, off = base_offset(p, self.fn.parent.datalayout)
        st = self.slots.get(base)
        if st is None or st.inexact:
            yield unknown
            return
        if base in self._in_record:
            if not whole:
                raise _CopyCycle
            return      # (what it holds is being gathered already)
        whole = whole or off is None or at is None or st.moves or st.period is not None
        lo = None if whole else off + at
        hi = None if whole or n is None else lo + n

        def inside(x, w=1):
            return whole or x is None or x + w > lo and (hi is None or x < hi)

        if any(inside(x, w) for x, w in st.int_stores):
            yield unknown       # (pointer bits may come as integers)
            return
        self._in_record.add(base)
        try:
            got = [(x, sh, real) for x, sh, real in st._entries(self) if inside(x)]
        finally:
            self._in_record.discard(base)
        for x, sh, real in got:
            yield None if whole or x is None or o is None else o + x - lo, sh, real

    def _pointer_fields(self, p, depth=8) -> set:
        """The fields of the memory ``p`` points to that hold only pointers without a
        shadow, as tuples of byte offsets from ``p`` (``(8, 0)``: the pointer at offset
        8 points to memory whose field 0 is such a field; ``(None,)``: every field),
        as ``const_fields`` spells them after the argument's index: from a local's
        ``_Slot`` (and the locals and arguments whose pointers it holds), from this
        function's ``const_fields``, and for a pointer loaded from such memory, from
        what is recorded for the field it was loaded from."""
        base, off = base_offset(p, self.fn.parent.datalayout)
        st = self.slots.get(base)
        if st is not None:
            fields = self._slot_fields(st, depth)
        elif isinstance(base, Argument):
            fields = {f[1:] for f in self.const_fields if f[0] == base.index}
        elif isinstance(base, Load) and depth:
            fields = {f[1:] for f in self._pointer_fields(base.operand(0), depth - 1)
                      if len(f) > 1 and f[0] == 0}
        else:
            fields = set()
        if (None,) in fields:
            return {(None,)}
        if off is None:
            return set()
        return {(None if f[0] is None else f[0] - off,) + f[1:] for f in fields if f}

    def _slot_fields(self, st, depth) -> set:
        """``_pointer_fields`` of a local whose ``_Slot`` is ``st``: its own fields
        holding only pointers without a shadow, and at each field that holds the
        same pointer (or null) wherever it is stored, that pointer's fields."""
        from ..ir.values import ConstantNull, Poison, Undef
        out = {(o,) for o in st.const_offsets(self)}
        if st.only_const_pointers(self):
            out.add((None,))
        if not depth or st.inexact or st.moves or st.period is not None:
            return out
        groups: dict = {}
        for v, o in st.ptrs:
            if not isinstance(v, (ConstantNull, Undef, Poison)):
                groups.setdefault(o, []).append(self._pointer_fields(v, depth - 1))
        for _, o in st.loaded:
            groups.setdefault(o, []).append(set())
        if st.moved_in:
            return out      # (fields copied in: only what the copies say, above)
        if None in groups or st.copies:
            return out
        for o, sets in groups.items():
            out.update((o,) + t for t in set.intersection(*sets))
        return out

    def callee_const_fields(self, args) -> frozenset:
        """For a call with ``args``: (argument index, byte offset, ...) of the fields
        that hold only pointers without a shadow in the memory the argument points to
        (``_pointer_fields``): a local with such fields (``_Slot.const_offsets``), or
        such a field of this function's own argument passed on; offset None: every
        field (a local holding no pointer with a shadow anywhere,
        ``_Slot.only_const_pointers``); more offsets: a field of the memory a pointer
        there points to (a ``gsl_function`` holding a params struct).  The callee's
        ``Activity`` takes them as ``const_fields``; its derivative is made for
        them."""
        if not self.const_fields and not self.slots:
            return frozenset()
        out = set()
        for k, a in enumerate(args):
            if a.type.is_pointer and a in self.shadowed:
                out.update((k,) + f for f in self._pointer_fields(a))
        return frozenset(out)

    def callee_kinds(self, args):
        return ["dup" if a.type.is_pointer and a in self.shadowed
                else "out" if floatish(a.type) and a in self.active else "const" for a in args]

    def _returns_shadow(self, callee, args, aggregate=False) -> bool:
        """Whether ``callee`` may return a shadowed pointer (``aggregate``: inside the
        struct it returns)."""
        kinds = tuple(self.callee_kinds(args))
        fields = self.callee_const_fields(args)
        own = self.callee_own_args(args)
        key = (callee, kinds, fields, own, aggregate)
        got = self._callee_ret.get(key)
        if got is None:
            if (callee, kinds, fields, own) in self._outer or len(self._outer) > 8:
                return True     # recursion (or deep nesting): assume it may
            sub = Activity(callee, kinds, self.inactive_fns, self._outer,
                           self.shadow_globals, const_fields=fields, own_args=own)
            rets = [t.value for b in callee.blocks for t in [b.terminator]
                    if isinstance(t, Ret) and t.value is not None]
            if aggregate:
                got = any(sub._aggregate_has_shadow(v) for v in rets)
            else:
                got = any(v in sub.shadowed for v in rets)
            self._callee_ret[key] = got
        return got

    def _aggregate_has_shadow(self, v, depth=0) -> bool:
        """Whether a struct/array value may hold a shadowed pointer."""
        if not has_pointer(v.type) or depth > 16:
            return False
        if isinstance(v, InsertValue):
            x = v.operand(1)
            return (x in self.shadowed if x.type.is_pointer
                    else self._aggregate_has_shadow(x, depth + 1)) \
                or self._aggregate_has_shadow(v.operand(0), depth + 1)
        if isinstance(v, Load):
            return v.operand(0) in self.shadowed \
                and self.may_hold_shadowed_pointers(v.operand(0))
        if isinstance(v, (Phi, Select)):
            vals = v.merged
            return any(self._aggregate_has_shadow(x, depth + 1) for x in vals)
        if isinstance(v, Call):
            return True   # a struct from another call: assume it may
        return False      # constants, arguments (passed by value from constant data)

    def is_active(self, v) -> bool:
        return v in self.active

    def has_shadow(self, v) -> bool:
        return v in self.shadowed

    def __str__(self):
        out = []
        for b in self.fn.blocks:
            names = [i.name or i.opcode for i in b.instructions
                     if i in self.active or i in self.shadowed]
            dropped = [i.name or i.opcode for i in b.instructions if i in self.pruned]
            line = " ".join([f"{b.name}:"] + names)
            if dropped:
                line += f"  (reach no output: {' '.join(dropped)})"
            out.append(line)
        return "\n".join(out)


_VALUE_OPS = (BinaryOp, UnaryOp, Cast, Select, Phi, ExtractValue, InsertValue,
              ExtractElement, InsertElement, ShuffleVector, Freeze, FCmp, ICmp)


# calls through which no derivative flows from their arguments (call-effects kinds)
_NO_DERIVATIVE_ARGS = ("inactive", "writes", "nomem", "typehint")


def _copy_into(call) -> bool:
    """Whether ``call`` is a memcpy/memmove/memset (its first argument: the memory
    written)."""
    eff = call_effect(call.callee_name or "")
    return eff is not None and eff.kind in ("memcpy", "memmove", "memset")


def _role(i, inactive_fns) -> str:
    """What instruction ``i`` does with the derivatives of its operands:
    ``"transform"`` -- it only computes its result from them (arithmetic, casts,
    phis, math library calls without a second result written through a pointer,
    inline assembly that only computes its result: ``effects.pure_inline_asm``):
    they matter only if its result's does; ``"none"`` -- none flows through
    (calls the call-effects table or the user declares inactive: ``printf`` of an
    error estimate); ``"output"`` -- anything else (stores, other calls, atomics,
    the return value): they may matter."""
    if isinstance(i, _VALUE_OPS):
        return "transform"
    if isinstance(i, Call):
        name = i.callee_name or ""
        if name in inactive_fns:
            return "none"
        eff = call_effect(name)
        if eff is not None and eff.kind == "math" and not eff.writes or pure_inline_asm(i):
            return "transform"
        if eff is not None and eff.kind in _NO_DERIVATIVE_ARGS:
            return "none"
    return "output"


def struct_return_origin(p):
    """The name of the defined function whose result, a struct mixing pointers and
    floating-point values, ``p`` is or was extracted from (``Buf b = buf_new(n);
    b.data[i] = ...``), else None: a pointer returned inside such a struct gets no
    shadow (a pointer alone, or a struct of only pointers and integers, does)."""
    v = underlying_object(p)
    if isinstance(v, ExtractValue):
        v = v.operand(0)
    if isinstance(v, Call) and (v.type.is_struct or v.type.is_array) \
            and not pointer_aggregate(v.type):
        c = v.called_function
        if c is not None and not c.is_declaration:
            return c.name.removesuffix(".enzyme")
    return None


# integer operations an address may go through between ptrtoint and inttoptr (rounding
# it up to an alignment: ``(uintptr_t)raw + 63 & ~63``; an offset added)
_ADDRESS_OPS = ("add", "sub", "and", "or", "xor")


def address_source(inst, act=None, limit=16):
    """For ``inttoptr`` of an integer computed from the address of one pointer ``p``
    (``ptrtoint p``, as often as it is used) by additions, subtractions, bit masks and
    selects with integers that come from no pointer -- the aligned-allocation idiom
    ``(double *)(((uintptr_t)raw + 63) & ~(uintptr_t)63)`` -- the ``p``; else None.
    The same operations on the address of ``p``'s shadow give the shadow's pointer.
    With ``act``, an integer loaded from shadowed memory that may hold pointers (an
    XOR-linked list's links) is not "from no pointer"."""
    if not (isinstance(inst, Cast) and inst.opcode == "inttoptr"):
        return None
    base = None
    walk = BoundedWalk(inst.operand(0), limit)
    for v in walk:
        if isinstance(v, Cast) and v.opcode in ("ptrtoint", "ptrtoaddr"):
            if base is not None and base is not v.operand(0):
                return None
            base = v.operand(0)
        elif isinstance(v, BinaryOp) and v.opcode in _ADDRESS_OPS:
            walk.add(*v.operands)
        elif isinstance(v, Select) and v.type.is_int:
            # a choice between two addresses of the same block (a bump allocator's
            # old and advanced top); the condition comes along as it is
            walk.add(*v.operands[1:])
        elif not _address_free(v, act):
            return None
    if walk.exceeded:
        return None
    return base


def _address_free(v, act, limit=8) -> bool:
    """Whether the integer ``v`` is computed without any pointer's address (a constant,
    an argument, a loaded or computed integer)."""
    walk = BoundedWalk(v, limit)
    for x in walk:
        if isinstance(x, Cast) and x.opcode in ("ptrtoint", "ptrtoaddr"):
            return False
        if isinstance(x, Load) and act is not None and x.operand(0) in act.shadowed \
                and act.may_hold_shadowed_pointers(x.operand(0)):
            return False
        if isinstance(x, (BinaryOp, Cast, Select, Phi)) and x.is_instruction:
            for o in x.operands:
                if o.type.is_int:
                    walk.add(o)
    return not walk.exceeded


def code_pointer(v, limit=16) -> bool:
    """Whether the pointer ``v`` is only ever called (the callee of calls, through phis,
    selects and casts; compared, as a dispatch does): a function, not data -- a C++
    pointer to member function, whose callee is a vtable slot or the pointer itself
    by a phi, even when the object it is read from carries derivatives."""
    walk = BoundedWalk(v, limit)
    for x in walk:
        for u in x.uses:
            user = u.user
            if isinstance(user, Call):
                if u.index != user.num_operands - 1 or x in user.args:
                    return False
            elif isinstance(user, (Phi, Select)) or \
                    isinstance(user, Cast) and user.opcode in ("bitcast", "addrspacecast"):
                if isinstance(user, Select) and u.index == 0:
                    return False
                walk.add(user)
            elif getattr(user, "opcode", None) != "icmp":
                return False
    return bool(v.uses) and not walk.exceeded


def _fresh_block(call) -> bool:
    """Whether ``call`` allocates a new block and returns it (``malloc``, ``calloc``,
    ``new``; not ``realloc``, not ``posix_memalign``)."""
    eff = call_effect(call.callee_name or "")
    return eff is not None and eff.kind == "alloc" and eff.out is None and eff.frees is None


def address_uses(a, derived: set, merges: bool = False):
    """The uses of ``a`` and of the pointers derived from it by GEPs and pointer casts
    (and, with ``merges``, phis and selects of it) -- collected in ``derived`` --
    other than those derivations and debug records."""
    work = [a]
    while work:
        v = work.pop()
        if v in derived:
            continue
        derived.add(v)
        for u in v.uses:
            user = u.user
            if getattr(user, "is_debug_use", False):
                continue   # #dbg_value / #dbg_declare: no effect on the program
            if isinstance(user, GEP) and u.index == 0 or isinstance(user, Cast) \
                    and user.opcode in ("bitcast", "addrspacecast") \
                    or merges and (isinstance(user, Phi)
                                   or isinstance(user, Select) and u.index > 0):
                work.append(user)
            else:
                yield u


def _own_uses(start, dl, depth=4, floats=False):
    """``start`` and the pointers derived from it (GEPs, casts, phis, selects) when
    every use of them loads a value without pointers of at most 64 bytes, stores an
    integer (``floats``: or a floating-point value), compares, or passes it to a defined
    function whose parameter is used the same way (``depth`` calls deep); else None (see
    ``Activity._own_merges``)."""
    from ..ir.module import Function
    derived, work = {start}, [start]
    while work:
        v = work.pop()
        for u in v.uses:
            user = u.user
            if getattr(user, "is_debug_use", False) or isinstance(user, ICmp) \
                    or _marker(user):
                continue
            if isinstance(user, GEP) and u.index == 0 \
                    or isinstance(user, Cast) and user.opcode in ("bitcast", "addrspacecast") \
                    or isinstance(user, Phi) or isinstance(user, Select) and u.index > 0:
                if user not in derived:
                    derived.add(user)
                    work.append(user)
            elif isinstance(user, Load) and u.index == 0:
                if has_pointer(user.type) or dl.store_size(user.type) > 64:
                    return None
            elif isinstance(user, Store) and u.index == 1:
                # (floating-point values written there could be the constant data's:
                # their derivative would be dropped where the check finds the primal)
                x = user.operand(0).type
                if has_pointer(x) or floatish(x) and not floats or dl.store_size(x) > 64:
                    return None
            elif isinstance(user, Call) and u.index < user.num_args:
                callee = user.called_function
                if not isinstance(callee, Function) or callee.is_declaration or depth == 0 \
                        or user.function_type.varargs or u.index >= len(callee.args):
                    return None
                callee.materialize()
                if _own_uses(callee.args[u.index], dl, depth - 1, floats) is None:
                    return None
            else:
                return None
    return derived


def _marker(user) -> bool:
    """A use that says nothing about what the code does with the value: a lifetime
    marker, or debug information (``-g`` must not change a verdict)."""
    return getattr(user, "is_debug_use", False) or isinstance(user, Call) and (
        user.callee_name or "").startswith(("llvm.lifetime.", "llvm.dbg."))


def _int_bits(ty) -> bool:
    """An integer (or integer vector) type wide enough to hold a float's bits."""
    el = ty.element if ty.is_vector else ty
    return el.is_int and (ty.count if ty.is_vector else 1) * el.width >= 16


def _derived_pointers(a):
    """``a`` and the pointers derived from it by GEPs and casts, when every other use of
    them loads or stores a value without pointers, or is a lifetime/debug marker or
    ``free``; else None (passed to a call: a parallel region or a callee may read it;
    stored somewhere or converted to an integer: it escapes)."""
    out: set = set()
    for u in address_uses(a, out):
        user = u.user
        if isinstance(user, Load) or isinstance(user, Store) and u.index == 1:
            if has_pointer(user.type if isinstance(user, Load) else user.operand(0).type):
                return None
        elif not (_marker(user) or isinstance(user, Call) and u.index == 0
                  and (user.callee_name or "") in FREE_NAMES):
            return None
    return out


def _inert_candidate(a, shadowed):
    """For the block ``a`` (an alloca or a fresh allocation): its pointers (through GEPs,
    casts, phis and selects, and the other blocks those choose between: ``n > 8 ?
    malloc(...) : local``) when one of them merges it with a pointer that has no shadow
    and they are used only to load and store values without pointers, to memset it, to
    compare or to free it; else None."""
    derived: set = set()
    blocks, done = [a], set()
    while blocks:
        b = blocks.pop()
        if b in done:
            continue
        done.add(b)
        for u in address_uses(b, derived, merges=True):
            user = u.user
            if isinstance(user, Load) or isinstance(user, Store) and u.index == 1:
                if has_pointer(user.type if isinstance(user, Load) else
                               user.operand(0).type):
                    return None
            elif not (_marker(user) or isinstance(user, ICmp)
                      or isinstance(user, Call) and u.index == 0
                      and ((user.callee_name or "") in FREE_NAMES
                           or (user.callee_name or "").startswith("llvm.memset."))):
                return None
        for x in _merged_with(derived):
            if isinstance(x, Alloca) or isinstance(x, Call) and _fresh_block(x):
                blocks.append(x)
    outside = [x for x in _merged_with(derived) if x.type.is_pointer]
    if not any(x not in shadowed for x in outside):
        return None     # no merge with constant data: nothing to decide here
    if any(x in shadowed for x in outside):
        return None     # merged with memory that has a shadow too: it keeps its own
    return derived


def _merged_with(derived):
    """The values outside ``derived`` that its phis and selects choose between."""
    for m in list(derived):
        if isinstance(m, (Phi, Select)):
            for x in m.merged:
                if x not in derived:
                    yield x


def _va_list_without_derivatives(a) -> bool:
    """Whether ``a`` is a ``va_list`` (``llvm.va_start`` on it) through which the
    function reads only integers, and pointers through which it touches no floats (a
    mechanism builder's species indices), or which it only hands to the C library's
    formatted output (a debug logger's ``vfprintf``): the values received through
    ``...`` then carry no derivative here, and the list needs no shadow.  (Where a
    float is read through it, it keeps one, and ``va_start`` is refused.)"""
    from ..ir.walk import derives_pointer
    from .globals import may_access_floats
    started, areas = False, []
    walk = BoundedWalk(a, 32)
    for x in walk:
        for u in x.uses:
            user = u.user
            if _marker(user):
                continue
            if isinstance(user, (GEP, Cast)) and user.type.is_pointer:
                walk.add(user)
            elif isinstance(user, Call):
                name = user.callee_name or ""
                if name.startswith(("llvm.va_start", "llvm.va_end", "llvm.va_copy")):
                    started |= name.startswith("llvm.va_start")
                elif not text_only(user):
                    return False
            elif isinstance(user, Load) and u.index == 0:
                if user.type.is_pointer:
                    areas.append(user)
                elif not user.type.is_int:
                    return False
            elif isinstance(user, Store) and u.index == 1:
                if not (user.operand(0).type.is_int or user.operand(0).type.is_pointer):
                    return False
            else:
                return False
    if not started or walk.exceeded:
        return False
    if not areas:
        return True
    # what is read through the save area and the overflow area
    walk = BoundedWalk(areas[0], 64)
    walk.add(*areas[1:])
    for x in walk:
        for u in x.uses:
            user = u.user
            if derives_pointer(u):
                walk.add(user)
            elif isinstance(user, Load) and u.index == 0:
                if user.type.is_pointer:
                    if may_access_floats(user):
                        return False
                elif not user.type.is_int:
                    return False
            elif isinstance(user, Store) and u.index == 0:
                pass    # the advanced area pointer kept in the va_list (checked above)
            elif not isinstance(user, ICmp):
                return False
    return not walk.exceeded


def doomed_blocks(fn) -> frozenset:
    """The blocks of ``fn`` from which no ``ret`` can be reached: paths that end in a
    throw, ``abort()``, ``exit()`` -- where no derivative comes back from."""
    from .cfg import CFG
    cfg = CFG(fn)
    back = [b for b in cfg.rpo if isinstance(b.terminator, Ret)]
    seen = set(back)
    while back:
        for p in cfg.preds[back.pop()]:
            if p not in seen:
                seen.add(p)
                back.append(p)
    return frozenset(b for b in cfg.rpo if b not in seen)


def _alloca_may_hold_float(a) -> bool:
    ty = a.allocated_type

    def has(t):
        if t.is_float or t.is_pointer:
            return True
        if t.is_vector or t.is_array:
            return has(t.element)
        if t.is_struct:
            return any(has(x) for x in t.elements)
        return False

    if has(ty):
        return True
    # i8 buffers (after SROA of memcpy'd structs) may hold anything: look at the uses
    work, seen = [a], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in v.users:
            if isinstance(u, (GEP, Cast, Phi, Select)):
                work.append(u)
            elif isinstance(u, Load) and (floatish(u.type) or u.type.is_pointer):
                return True
            elif isinstance(u, Store) and (floatish(u.operand(0).type)
                                           or u.operand(0).type.is_pointer):
                return True
            elif isinstance(u, Call) and not _marker(u) and not text_only(u):
                # (a call touching only text leaves it alone: std::string's
                # ``_M_create`` storing a capacity into the caller's ``size_t``)
                return True
    return False


# how many calls (and pointers loaded through a parameter) deep ``_param_summary`` looks:
# unoptimised callbacks reached through a driver, a struct holding the params and a
# callback calling another take five or six
_DEPTH = 6


class _CopyCycle(Exception):
    """Locals copied into each other (``Activity.copied_pointers``)."""


class _Slot:
    """What a non-escaping local holds, with the byte offsets (from the local's start;
    None where not constant) at which pointers are stored and loaded -- by this
    function or by the callees it is passed to (``_param_summary``)."""

    __slots__ = ("ptrs", "loaded", "floats", "called", "ptr_loads", "int_stores",
                 "inexact", "returned", "copies", "period", "derefs", "held_in",
                 "int_loads", "own_loads", "moved_in", "moves", "copied_out")

    def __init__(self):
        self.ptrs: list = []      # (pointer value stored into the local, offset)
        self.loaded: list = []    # (pointer through which a callee loads what it
        #                            stores there, offset)
        self.floats = False       # whether it may hold floating-point values
        self.called = False       # whether it is passed to calls (``_passed_as_slot``)
        self.ptr_loads: list = []     # offsets at which pointers are loaded
        self.int_stores: list = []    # (offset, size) of integers stored
        self.int_loads: list = []     # (offset, size) of integers loaded
        self.own_loads: list = []     # (load, offset) of the pointers its function loads
        self.inexact = False      # pointers loaded or stored as aggregates, or read
        #                           through a callee's result: no per-field answer
        self.returned = False     # (a callee's summary) it returns the parameter
        self.copies: list = []    # (by-value parameter copied in, offset, offsets of
        #                            its pointer fields): ``rewrites.copy_byval_params``
        self.period = None        # an array of structs: offsets are within an element
        #                           (modulo its size), the same field in every element --
        #                           for telling integer fields from pointer fields only
        self.derefs: list = []    # (offset, ``_Later`` of the ``_Slot`` summarising what
        #                           is done with the memory a pointer loaded there points
        #                           to, or None: not known) for every pointer loaded
        self.held_in: list = []   # stores of the local's own address (into another local)
        self.moved_in: list = []  # (the caller's pointer to memory a callee copies bytes
        #                           from into the local -- a by-value argument, a struct
        #                           passed by pointer --, the offset copied from there,
        #                           the offset it lands at, the size; None: not known)
        self.moves = False        # bytes moved within the local (``list[i] = list[i-1]``
        #                           by a callee's memcpy): no per-field answer
        self.copied_out = False   # copied whole into other memory (a by-value record's
        #                           copy put into a list): the pointers leave with the
        #                           bytes (``check_const_pointers_copied`` judges there)

    def sources(self):
        """The caller's values a callee's summary names: the pointers it stores, those
        it loads them through, the memory it copies bytes from."""
        return [v for v, _ in self.ptrs + self.loaded] + [v for v, *_ in self.moved_in]

    def add(self, other, shift) -> None:
        """Take in ``other`` (a callee's summary), its offsets moved by ``shift``."""
        def mv(o):
            return None if o is None or shift is None else self.fold(o + shift)
        self.ptrs.extend((v, mv(o)) for v, o in other.ptrs)
        self.loaded.extend((v, mv(o)) for v, o in other.loaded)
        self.ptr_loads.extend(mv(o) for o in other.ptr_loads)
        self.int_stores.extend((mv(o), n) for o, n in other.int_stores)
        self.derefs.extend((mv(o), d) for o, d in other.derefs)
        self.int_loads.extend((mv(o), n) for o, n in other.int_loads)
        self.moved_in.extend((v, at, mv(o), n) for v, at, o, n in other.moved_in)
        self.floats |= other.floats
        self.inexact |= other.inexact
        self.moves |= other.moves
        self.copied_out |= other.copied_out

    def fold(self, off):
        """An offset from the local's start as this slot records it."""
        return off if off is None or self.period is None else off % self.period

    def pointer_bits_as_integers(self, size) -> bool:
        """Whether an integer stored here may be read back as a pointer (pointer bits
        through an integer: its pointers cannot be followed)."""
        if self.moves and self.int_stores and self.ptr_loads:
            return True     # (an integer may be moved to where a pointer is read)
        for o, n in self.int_stores:
            for lo in self.ptr_loads:
                if o is None or lo is None or o < lo + size and lo < o + n:
                    return True
        return False

    def _entries(self, act):
        """(offset, whether it may hold a pointer with a shadow, whether it holds a
        pointer of the program without one) for every pointer put into the local."""
        for v, o in self.ptrs:
            yield o, v in act.shadowed, v.is_instruction or getattr(v, "is_argument", False)
        for p, o in self.loaded:
            yield o, p in act.shadowed and act.may_hold_shadowed_pointers(p), False
        for param, o, fields in self.copies:
            for f in fields:
                const = (param.index, f) in act.const_fields \
                    or (param.index, None) in act.const_fields \
                    or param not in act.shadowed    # (an enzyme_const struct by value)
                yield self.fold(o + f), param in act.shadowed and not const, const
        for p, at, o, n in self.moved_in:
            yield from act.copied_pointers(p, at, o, n)

    def const_offsets(self, act) -> frozenset:
        """The offsets that hold only pointers without a shadow, at least one of them
        a value of this program (not null, not a global or a function): the fields of
        a C++ closure or view that refer to ``enzyme_const`` data beside fields that
        refer to duplicated data, or of a problem struct whose pointers all refer to
        constant data beside a double (the local's shadow is for the double: its
        pointer fields stay null there, and a callee must not read them as shadows).
        Empty unless every pointer is stored and loaded alone at a known offset, each
        load at an offset where pointers are stored or at one no pointer store
        overlaps."""
        if self.inexact or self.moves or not (self.ptrs or self.copies or self.moved_in) \
                or self.period is not None:
            # (an array of structs: a callee given one element may reach the others at
            # offsets it cannot fold -- only "every field", only_const_pointers)
            return frozenset()
        entries = list(self._entries(act))
        offs = {o for o, _, _ in entries}
        if None in offs or None in self.ptr_loads:
            return frozenset()
        for lo in self.ptr_loads:
            if any(lo != o and abs(lo - o) < 8 for o in offs):
                return frozenset()
        shadowed = {o for o, sh, _ in entries if sh}
        return frozenset(o for o, sh, real in entries if real and o not in shadowed)

    def only_const_pointers(self, act) -> bool:
        """Whether every pointer put into the local, at whatever offset, is a pointer of
        the program without a shadow (an array of problem structs, each holding
        ``enzyme_const`` data, filled in a loop): no field of it holds a shadow."""
        if self.inexact:
            return False
        entries = list(self._entries(act))
        return bool(entries) and not any(sh for _, sh, _ in entries) \
            and any(real for _, _, real in entries)

    def holds_shadowed(self, act, offset=None) -> bool:
        """Whether a pointer with a shadow may be stored into the local (at ``offset``,
        when given and known).  One passed to calls that holds nothing but null
        (libstdc++'s ``pair(nullptr_slot, node)`` at -O0) keeps a shadow, as it had
        before such locals were followed: null is its own shadow, and the callee may
        store it beside pointers that have one."""
        from ..ir.values import ConstantNull
        if self.called and not self.loaded and not self.moved_in \
                and all(isinstance(v, ConstantNull) for v, _ in self.ptrs):
            return True
        if offset is not None and offset in self.const_offsets(act):
            return False
        return any(sh for _, sh, _ in self._entries(act))


def base_offset(p, dl, limit=64, to_variable=False):
    """``p`` stripped of GEPs and pointer casts, and the constant byte offset they add
    (None when some index is not constant); ``to_variable``: stripped only down to a
    GEP with an index that is not constant (an element of an array), so the offset is
    always known."""
    off = 0
    while limit:
        limit -= 1
        if isinstance(p, GEP):
            o = p.constant_offset(dl)
            if o is None and to_variable:
                break
            off = None if o is None or off is None else off + o
            p = p.operand(0)
        elif isinstance(p, Cast) and p.opcode in ("bitcast", "addrspacecast"):
            p = p.operand(0)
        else:
            break
    return p, off


def gep_offset(gep, dl, period=None):
    """The byte offset ``gep`` adds when every index is a constant; with ``period``,
    modulo it, also where an index that is not constant steps by a multiple of it (the
    element of an array of structs: ``getelementptr %Seg, ptr %S, i64 %k``); else None."""
    o = gep.constant_offset(dl)
    if o is not None or period is None:
        return o if o is None or period is None else o % period
    from ..ir.values import ConstantInt
    ty, idx = gep.source_type, gep.indices
    if not idx:
        return None
    total, stride = 0, dl.size_in_bytes(ty)
    for n, i in enumerate(idx):
        if n > 0:
            if ty.is_struct:
                if not isinstance(i, ConstantInt):
                    return None
                total += dl.field_offsets(ty)[i.value]
                ty = ty.elements[i.value]
                continue
            if not (ty.is_array or ty.is_vector):
                return None
            ty = ty.element
            stride = dl.size_in_bytes(ty)
        if isinstance(i, ConstantInt):
            total += i.value * stride
        elif stride == 0 or stride % period:
            return None
    return total % period


def _offset_uses(a, dl, period=None):
    """The uses of ``a`` and of the pointers derived from it by GEPs and pointer casts,
    as ``address_uses``, each with the byte offset from ``a`` of the pointer used
    (None when not constant; with ``period``, see ``gep_offset``)."""
    work, seen = [(a, 0)], set()
    while work:
        v, off = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in v.uses:
            user = u.user
            if getattr(user, "is_debug_use", False):
                continue
            if isinstance(user, GEP) and u.index == 0:
                o = gep_offset(user, dl, period)
                o = None if o is None or off is None else off + o
                work.append((user, o if o is None or period is None else o % period))
            elif isinstance(user, Cast) and user.opcode in ("bitcast", "addrspacecast"):
                work.append((user, off))
            else:
                yield u, off


def byval_type(call, index):
    """The type a call passes by value (``byval(T)``) at argument ``index``, else None."""
    from ..ir.attributes import named_type
    attrs = call.arg_attrs[index] if call.arg_attrs and index < len(call.arg_attrs) else None
    return named_type(attrs, "byval", call.function.parent)


def pointer_offsets(ty, dl, limit=64):
    """The byte offsets of the pointers in values of ``ty`` (None past ``limit``)."""
    out = []

    def walk(t, off):
        if len(out) > limit:
            return
        if t.is_pointer:
            out.append(off)
        elif t.is_struct:
            for e, o in zip(t.elements, dl.field_offsets(t)):
                walk(e, off + o)
        elif t.is_array and has_pointer(t.element):
            size = dl.size_in_bytes(t.element)
            for k in range(t.count):
                walk(t.element, off + k * size)

    walk(ty, 0)
    return None if len(out) > limit else out


def _zeroes(call) -> bool:
    """A ``memset`` of zero bytes."""
    return (call.callee_name or "").startswith("llvm.memset.") and len(call.args) >= 3 \
        and getattr(call.args[1], "value", None) == 0


def constant_leaves(call, dl):
    """For ``memcpy(local, @const, n)`` copying a constant global, or its first ``n``
    bytes (clang's initialiser of a local struct, ``sort_ctx ctx = {perm, -1}``; the
    fields the code sets next left out by LLVM): the leaves copied, ``[(offset,
    constant)]``; else None."""
    from ..ir.values import ConstantAggregate
    if not (call.callee_name or "").startswith("llvm.memcpy.") or len(call.args) < 3:
        return None
    g = call.args[1]
    init = getattr(g, "initializer", None) if getattr(g, "is_constant", False) else None
    n = getattr(call.args[2], "value", None)
    if init is None or n is None or not 0 < n <= dl.size_in_bytes(g.value_type):
        return None
    out = []

    def walk(c, ty, o):
        aggregate = ty.is_struct or ty.is_array
        if not aggregate or not isinstance(c, ConstantAggregate):
            if aggregate and has_pointer(ty):
                return False    # (a zeroed struct of pointers: not followed)
            out.append((o, c))  # (a zeroed or text array: integer bytes)
            return True
        offs = dl.field_offsets(ty) if ty.is_struct else None
        for k, x in enumerate(c.operands):
            at = offs[k] if offs is not None else k * dl.size_in_bytes(x.type)
            if not walk(x, x.type, o + at):
                return False
        return True
    if not walk(init, g.value_type, 0):
        return None
    if any(o < n < o + dl.store_size(c.type) for o, c in out):
        return None     # (a leaf cut in two)
    return [(o, c) for o, c in out if o < n]


def _copied_param(call, off, dl):
    """For ``memcpy(local + off, param, n)`` with ``param`` a by-value parameter holding
    pointers, copied whole into the local at its start (``rewrites.copy_byval_params``):
    ``(param, offsets of its pointer fields, whether it holds floats)``, else None."""
    if not (call.callee_name or "").startswith("llvm.memcpy.") or off != 0 \
            or len(call.args) < 3:
        return None
    param = call.args[1]
    if not getattr(param, "is_argument", False):
        return None
    from ..ir.attributes import named_type
    ty = named_type(param.attrs, "byval", param.parent.parent)
    if ty is None or not has_pointer(ty):
        return None
    n = call.args[2]
    fields = pointer_offsets(ty, dl)
    if fields is None or getattr(n, "value", None) != dl.size_in_bytes(ty):
        return None
    return param, fields, floatish(ty)


def _passed_as_slot(call, index, st, offset, depth=_DEPTH) -> bool:
    """Whether the local passed to ``call`` at operand ``index`` (at ``offset`` into
    it) stays followable (``_param_summary``); what the callee may store there goes to
    ``st``."""
    got = _param_summary(call, index, depth)
    if got is None:
        return False
    if got.returned:      # the call's result is the local again: only loaded from here
        for u in call.uses:
            if not (isinstance(u.user, Load) and u.index == 0):
                return False
            got.floats |= floatish(u.user.type)
        got.inexact = True
    st.add(got, offset)
    st.called = True
    return True


def _passed_to_comparator(call, index, st, offset, depth=_DEPTH) -> bool:
    """Whether the local passed as GNU ``qsort_r``'s last argument (the comparator's
    context, ``sort_ctx ctx = {perm, -1}``) stays followable: the comparator passed,
    a function defined in the program, only loads through its third parameter (what it
    loads goes to ``st``)."""
    from ..ir.module import Function
    cmp = call.args[3] if call.num_args == 5 else None
    if (call.callee_name or "") != "qsort_r" or index != 4 or depth == 0 \
            or not isinstance(cmp, Function) or cmp.is_declaration or len(cmp.args) != 3:
        return False
    cmp.materialize()
    got = _memory_summary(call, cmp.args[2], cmp.args[2], depth)
    # (stores of the comparator's other arguments there would be the elements', which
    # the summary would take for qsort_r's own arguments)
    if got is None or got.returned or got.ptrs or got.loaded or got.moved_in \
            or got.moves or got.copied_out:
        return False
    st.add(got, offset)
    st.called = True
    return True


def _param_summary(call, index, depth=_DEPTH, callee=None):
    """What the defined function ``call`` calls does with the memory its parameter at
    operand ``index`` points to, when that memory is only a place for pointers
    and values it loads: it loads from it, stores into it its other arguments,
    pointers loaded through them, integers or values computed from what it loaded
    there (a C++ iterator's ``operator++``), passes it to functions that do the same
    (``base()``), returns it (``return *this``).  Returns a ``_Slot`` (offsets from the
    parameter) holding the caller's values stored there, the caller's pointers through
    which the values stored are loaded, whether floats are stored or loaded there, and
    ``returned``: whether the call's result is the parameter itself; None for any
    other use.  An indirect call (a callback given ``void *params``): what every
    function it may reach does (``callgraph.indirect_targets``, as the derivative's
    dispatch calls them)."""
    from ..ir.module import Function
    from .callgraph import indirect_targets, is_indirect
    if callee is None and is_indirect(call) and depth > 0:
        targets = indirect_targets(call.function.parent, call)
        if not targets or len(targets) > 8:
            return None
        out = _Slot()
        for f in targets:
            sub = _param_summary(call, index, depth, callee=f)
            if sub is None:
                return None
            out.add(sub, 0)
            out.returned |= sub.returned
        return out
    callee = callee or call.called_function
    if not isinstance(callee, Function) or callee.is_declaration or depth == 0 \
            or index >= call.num_args or call.function_type.varargs \
            or index >= len(callee.args):
        return None
    callee.materialize()
    dl = callee.parent.datalayout
    param = callee.args[index]
    out = _Slot()
    ty = byval_type(call, index)
    if ty is not None:
        # the callee's own copy: every field read, nothing stored back
        fields = pointer_offsets(ty, dl)
        if fields is None:
            return None
        out.ptr_loads.extend(fields)
        out.derefs.extend((f, None) for f in fields)
        out.floats = floatish(ty)
        return out
    return _memory_summary(call, param, param, depth)


def _memory_summary(call, root, param, depth):
    """``_param_summary``'s answer for the memory ``root`` points to in the callee
    (``param``, the parameter, or a pointer loaded through it: ``_pointee_summary``)."""
    from ..ir.values import Argument, ConstantNull, Poison, Undef
    dl = param.parent.parent.datalayout
    out = _Slot()
    aliases, contents, stored, moves = {root: 0}, set(), [], []
    work = [root]

    def outer(v):
        """The caller's value for the callee's argument ``v``, or None."""
        return call.args[v.index] if isinstance(v, Argument) and v is not param else None

    def content_load(x, limit=8):
        """The load from the parameter's memory ``x`` is derived from, or None."""
        while limit and isinstance(x, (GEP, Cast)):
            x, limit = x.operand(0), limit - 1
        return x if x in contents else None

    while work:
        v = work.pop()
        off = aliases[v]
        for u in v.uses:
            user = u.user
            if getattr(user, "is_debug_use", False) or _marker(user):
                continue
            if isinstance(user, (GEP, Cast)) and u.index == 0 and user.type.is_pointer:
                if user not in aliases:
                    o = user.constant_offset(dl) if isinstance(user, GEP) else 0
                    aliases[user] = None if o is None or off is None else off + o
                    work.append(user)
            elif isinstance(user, Load) and u.index == 0 and not user.volatile:
                out.floats |= floatish(user.type)
                if user.type.is_pointer:
                    out.ptr_loads.append(off)
                    out.derefs.append((off, _Later(_pointee_summary, call, user, param,
                                                   depth)))
                elif has_pointer(user.type):
                    out.inexact = True
                elif not floatish(user.type):
                    out.int_loads.append((off, dl.store_size(user.type)))
                contents.add(user)
            elif isinstance(user, Store) and u.index == 1 and not user.volatile:
                stored.append((user.operand(0), off))     # (judged once every load is seen)
            elif isinstance(user, Store) and u.index == 0 and not user.volatile:
                # the pointer kept in a local (every parameter at -O0; a driver's
                # workspace struct holding the caller's ``void *params``): what is
                # loaded back from there is the same pointer
                kept = _kept_in_local(user, dl, depth)
                if kept is None:
                    return None
                loads, subs = kept
                for ld in loads:
                    if ld not in aliases:
                        aliases[ld] = off
                        work.append(ld)
                for sub in subs:
                    out.add(sub, off)
            elif isinstance(user, Ret):
                out.returned = True
            elif isinstance(user, ICmp):
                continue
            elif isinstance(user, Call) and u.index == 0 and off == 0 \
                    and (user.callee_name or "") in FREE_NAMES:
                continue    # the caller's block freed here (a ``problem_free`` helper)
            elif isinstance(user, Call) and u.index < 2 \
                    and mem_intrinsic(user.callee_name or "") in ("memcpy", "memmove"):
                moves.append(user)      # (judged once every alias is known)
            elif isinstance(user, Call) and u.index < user.num_args:
                sub = _param_summary(user, u.index, depth - 1)
                if sub is None:
                    return None
                mapped = [outer(p) for p in sub.sources()]
                if any(m is None for m in mapped):
                    return None
                n, k = len(sub.ptrs), len(sub.ptrs) + len(sub.loaded)
                sub.ptrs = [(m, o) for m, (_, o) in zip(mapped[:n], sub.ptrs)]
                sub.loaded = [(m, o) for m, (_, o) in zip(mapped[n:k], sub.loaded)]
                sub.moved_in = [(m, *rest) for m, (_, *rest) in zip(mapped[k:], sub.moved_in)]
                out.add(sub, off)
                if sub.returned:
                    out.inexact = True
                    if user not in aliases:
                        aliases[user] = None
                        work.append(user)
            else:
                return None
    for m in dict.fromkeys(moves):
        if not _moved(m, aliases, outer, out, dl):
            return None
    dl_size = dl.store_size
    for x, off in stored:
        if isinstance(x, (ConstantNull, Undef, Poison)):
            continue
        src = content_load(x)
        if src is not None:
            # what it held, put back (an iterator advanced): elsewhere than where it
            # was read, the fields cannot be told apart
            if has_pointer(x.type) and (off is None or aliases.get(src.operand(0)) != off):
                out.inexact = True
            continue
        if floatish(x.type):
            out.floats = True
        elif x.type.is_pointer and outer(x) is not None:
            out.ptrs.append((outer(x), off))
        elif isinstance(x, Load) and x.type.is_pointer \
                and outer(underlying_object(x.operand(0))) is not None:
            out.loaded.append((outer(underlying_object(x.operand(0))), off))
        elif x.type.is_int or x.type.is_vector and x.type.element.is_int:
            out.int_stores.append((off, dl_size(x.type)))
        else:
            return None
    return out


def _moved(call, aliases, outer, out, dl) -> bool:
    """For a ``memcpy``/``memmove`` in a callee touching the memory a parameter points
    to (``aliases``: the pointers into it, at their offsets; see ``_memory_summary``):
    whether it moves bytes within that memory (``list[pos] = list[pos - 1]``:
    ``out.moves``), copies them out of it (``out.copied_out``: judged where they land,
    ``check_const_pointers_copied``), or copies in bytes from memory the caller passes
    -- a record by value (``list[pos] = c``), a struct by pointer (``*dst = *src``) --:
    ``out.moved_in`` names the caller's pointer to it, the offset and the size, and the
    caller's analysis takes the pointers found there (``Activity.copied_pointers``)."""
    dst, src, n = call.args[0], call.args[1], call.args[2]
    if dst in aliases and src in aliases:
        out.moves = True
        return True
    if src in aliases:
        out.copied_out = True
        return True
    got = _copy_source(src, dl)
    if got is None or outer(got[0]) is None:
        return False
    param, at = got
    out.moved_in.append((outer(param), at, aliases[dst], getattr(n, "value", None)))
    return True


def _moved_within_or_out(call, index, a, off, dl, st) -> bool:
    """For a ``memcpy``/``memmove`` at operand ``index`` of which the local ``a`` is (at
    ``off``): whether it moves bytes within the local (``st.moves``), copies them out
    of it into other memory (``st.copied_out``) or into it from other memory
    (``st.moved_in``: the pointers there are found where the analysis runs,
    ``Activity.copied_pointers``)."""
    if mem_intrinsic(call.callee_name or "") not in ("memcpy", "memmove"):
        return False
    other = base_offset(call.args[1 - index], dl)[0]
    if other is a:
        st.moves = True
    elif index == 1:
        st.copied_out = True
    else:
        st.moved_in.append((call.args[1], 0, off, getattr(call.args[2], "value", None)))
    return True


def _copy_source(p, dl):
    """(the parameter, the offset into the memory it points to) when ``p`` points there
    at a constant offset -- or into the local ``rewrites.copy_byval_params`` fills from
    a by-value parameter and nothing else writes --, else None."""
    base, at = base_offset(p, dl)
    if at is None:
        return None
    if isinstance(base, Alloca):
        fills = [u.user for u in base.uses if isinstance(u.user, Call) and u.index == 0
                 and mem_intrinsic(u.user.callee_name or "") == "memcpy"]
        if len(fills) != 1 or not isinstance(fills[0].args[1], Argument) \
                or not _only_read(base, fills[0]):
            return None
        base = fills[0].args[1]
    return (base, at) if isinstance(base, Argument) else None


def _only_read(a, fill, limit=64) -> bool:
    """Whether the local ``a`` is written by nothing but the call ``fill``: loaded
    from, copied from, its address offset or cast."""
    walk = BoundedWalk(a, limit)
    for v in walk:
        for u in v.uses:
            user = u.user
            if user is fill or getattr(user, "is_debug_use", False) or _marker(user):
                continue
            if isinstance(user, (GEP, Cast)) and u.index == 0:
                walk.add(user)
            elif isinstance(user, Load) and u.index == 0:
                continue
            elif isinstance(user, Call) and u.index == 1 \
                    and mem_intrinsic(user.callee_name or "") in ("memcpy", "memmove"):
                continue
            else:
                return False
    return not walk.exceeded


def _pointee_summary(call, load, param, depth):
    """What the callee does with the memory a pointer it loads through its parameter
    points to (``gsl_function``'s ``params``, a driver's workspace holding the user's
    ``void *``): a ``_Slot`` when it only loads from it, stores values without pointers
    into it or passes it to functions that do the same; else None."""
    if depth <= 1:
        return None
    got = _memory_summary(call, load, param, depth - 1)
    if got is None or got.ptrs or got.loaded or got.moved_in or got.returned or got.inexact \
            or got.copies or got.moves or got.copied_out:
        return None
    return got


class _Later:
    """A value computed when first asked for (the nested summaries few callers read)."""

    __slots__ = ("_f", "_args", "_v")

    def __init__(self, f, *args):
        self._f, self._args, self._v = f, args, None

    def __call__(self):
        if self._args is not None:
            self._v, self._args = self._f(*self._args), None
        return self._v


def _kept_in_local(store, dl, depth):
    """For ``store p, ptr %w + o`` where ``%w`` is a local whose address goes nowhere
    (``_slot_of``), whose field ``o`` holds nothing but ``p`` (or null) and is read only
    whole, as a pointer, here or by
    callees that only load from the memory it points to, store values without
    pointers there, or pass it on to functions that do the same (``_pointee_summary``):
    (the loads of that field here, the callees' summaries), else None."""
    w, o = base_offset(store.operand(1), dl)
    if not isinstance(w, Alloca) or o is None or depth <= 0:
        return None
    # (one level down: the local's own calls may lead back here -- a curve object kept
    # in a local, passed to a virtual call whose targets keep it in theirs)
    st = _slot_of(w, dl, depth=depth - 1)
    from ..ir.values import ConstantNull, Poison, Undef
    if st is None or st.held_in or st.copies or any(
            po == o and not (v is store.operand(0) or isinstance(v, (ConstantNull, Undef,
                                                                     Poison)))
            for v, po in st.ptrs + st.loaded) or st.moved_in:
        return None     # (the field holds other pointers too: see Activity._slot_fields)
    return _held_at(st, o, own=True)


def _read_by_parallel_region(call, index):
    """When ``call`` is an OpenMP fork (``__kmpc_fork_call(loc, n, outlined,
    shared...)``) passing, at operand ``index``, a shared variable that the outlined
    function only loads from (the region reads the variable: the local stays
    followable): the types loaded (possibly none), else None."""
    if (call.callee_name or "") != "__kmpc_fork_call" or index < 3 \
            or index >= call.num_args:
        return None
    from ..ir.module import Function
    outlined = call.args[2]
    if not isinstance(outlined, Function) or outlined.is_declaration \
            or index - 1 >= len(outlined.args):
        return None
    return _only_loaded(outlined.args[index - 1], 4)


def _shared_with_region(call, index, st, offset, depth) -> bool:
    """For an OpenMP fork passing the local at operand ``index`` as a shared variable
    (see ``_read_by_parallel_region``): whether the outlined function only loads from
    it, stores values without pointers into it or passes it on to functions that do
    (``_param_summary`` of its parameter, which is one position before the operand);
    what it does goes to ``st``, field by field."""
    from ..ir.module import Function
    if (call.callee_name or "") != "__kmpc_fork_call" or index < 3 \
            or index >= call.num_args or depth <= 0:
        return False
    outlined = call.args[2]
    if not isinstance(outlined, Function) or outlined.is_declaration \
            or index - 1 >= len(outlined.args):
        return False
    outlined.materialize()
    param = outlined.args[index - 1]
    got = _memory_summary(call, param, param, depth)
    if got is None or got.ptrs or got.loaded or got.moved_in or got.returned \
            or got.moves or got.copied_out:
        return False        # (what it stores there would be mapped to the wrong operands;
        #                     bytes it copies are followed only for direct callees)
    st.add(got, offset)
    st.called = True
    return True


def _only_loaded(param, depth):
    """The types loaded from ``param`` when its function only loads from it (or passes
    it to a defined function that does: clang's ``-g`` outlined wrapper), else None."""
    from ..ir.module import Function
    fn = param.parent
    if isinstance(fn, Function):
        fn.materialize()   # a lazily parsed body has no uses yet
    types = []
    for u in param.uses:
        user = u.user
        if getattr(user, "is_debug_use", False):
            continue
        if isinstance(user, Load) and u.index == 0:
            types.append(user.type)
            continue
        callee = user.called_function if isinstance(user, Call) else None
        if not isinstance(callee, Function) or callee.is_declaration or depth == 0 \
                or u.index >= user.num_args or user.function_type.varargs \
                or u.index >= len(callee.args):
            return None
        got = _only_loaded(callee.args[u.index], depth - 1)
        if got is None:
            return None
        types.extend(got)
    return types


def _local_slots(fn) -> dict:
    """Allocas whose address never escapes -- every use, through GEPs and casts, is a
    load from it or a store to it (or a lifetime/debug marker, or a call that only
    uses it that way: ``_param_summary``) -- and what they hold.  An alloca where an
    integer is stored over bytes loaded as a pointer (pointer bits through an integer)
    is left out: its pointers cannot be followed -- unless it is an array of structs
    whose fields, taken within an element, do not overlap (``_Slot.period``: problem
    structs ``S[k]`` with an integer field, filled in a loop)."""
    out = {}
    dl = fn.parent.datalayout
    for b in fn.blocks:
        for a in b.instructions:
            if isinstance(a, Call) and _fresh_block(a):
                st = _slot_of(a, dl)     # a block allocated here, freed here or not
                if st is not None:
                    out[a] = st
                continue
            if not isinstance(a, Alloca):
                continue
            st = _slot_of(a, dl)
            t = a.allocated_type
            while t.is_array:       # (an array of arrays of structs: a grid of cells)
                t = t.element
            if st is None and a.allocated_type.is_array and a.count is None and t.is_struct \
                    and dl.size_in_bytes(t) > 0:
                st = _slot_of(a, dl, dl.size_in_bytes(t))
            if st is not None:
                out[a] = st
    _follow_held(out, dl)
    return out


def _follow_held(slots, dl) -> None:
    """Locals whose address is stored into another local (a params struct put into a
    ``gsl_function {function, params}``, a driver's workspace) stay followable when that
    other local is, and the field holding the address holds nothing else and is read
    only by callees that only load from the memory it points to, store values without
    pointers there, or pass it to functions that do the same (``_pointee_summary``):
    what those callees do is added to the local's ``_Slot``.  Outer locals first; one
    whose address cannot be followed so is dropped from ``slots``."""
    pending = [a for a, st in slots.items() if st.held_in]
    while pending:
        progress = False
        for a in list(pending):
            bases = [base_offset(s.operand(1), dl) for s in slots[a].held_in]
            if any(b in pending and b is not a for b, _ in bases):
                continue        # an outer local not yet decided
            pending.remove(a)
            progress = True
            subs = []
            for b, o in bases:
                st = slots.get(b)
                got = None if b is a or st is None or st.copies or any(
                    po == o and v is not a for v, po in st.ptrs + st.loaded) or st.moved_in \
                    else _held_at(st, o)
                if got is None:
                    subs = None
                    break
                subs.extend(got[1])
            if subs is None:
                del slots[a]
                continue
            for sub in subs:
                slots[a].add(sub, 0)
                slots[a].called = True
        if not progress:        # locals holding each other's addresses
            for a in pending:
                del slots[a]
            return


def _held_at(st, o, own=False):
    """What is done with the memory at the address loaded from field ``o`` of the
    local whose ``_Slot`` is ``st``: (the loads of that field by the local's own
    function, when ``own``, else none allowed; the summaries of the callees' uses of
    it), or None when it cannot be told (see ``_follow_held``, ``_kept_in_local``)."""
    if st is None or o is None or st.period is not None or st.inexact or st.moves \
            or st.copied_out \
            or st.moved_in or any(po is None for _, po in st.ptrs + st.loaded):
        return None
    if any(lo is None or lo < o + 8 and o < lo + n for lo, n in st.int_loads + st.int_stores):
        return None
    loads = []
    for ld, lo in st.own_loads:
        if lo is None or abs(lo - o) < 8 and lo != o:
            return None
        if lo == o:
            if not own:
                return None
            loads.append(ld)
    subs = []
    for do, d in st.derefs:
        if do is None or abs(do - o) < 8 and do != o:
            return None
        if do == o:
            sub = d() if d is not None else None
            if sub is None:
                return None
            subs.append(sub)
    return loads, subs


def _slot_of(a, dl, period=None, depth=_DEPTH):
    """The ``_Slot`` of the alloca ``a`` (offsets modulo ``period`` when given), or
    None where it cannot be followed (see ``_local_slots``)."""
    st, ok = _Slot(), True
    st.floats = isinstance(a, Alloca) and floatish(a.allocated_type)
    st.period = period
    for u, off in _offset_uses(a, dl, period):
        user = u.user
        if isinstance(user, Load):
            t = user.type
            st.floats |= floatish(t)
            if t.is_pointer:
                st.ptr_loads.append(off)
                st.own_loads.append((user, off))
            elif has_pointer(t):
                ok = False
            elif not floatish(t):
                st.int_loads.append((off, dl.store_size(t)))
        elif isinstance(user, Store) and u.index == 1:
            x = user.operand(0)
            if x.type.is_pointer:
                st.ptrs.append((x, off))
            elif has_pointer(x.type):
                ok = False
            elif floatish(x.type):
                st.floats = True
            else:
                st.int_stores.append((off, dl.store_size(x.type)))
        elif isinstance(user, Store) and u.index == 0 and off == 0 and period is None \
                and not user.volatile:
            st.held_in.append(user)     # its address kept in another local: see
            #                             _local_slots
        elif _marker(user) or isinstance(user, ICmp):
            pass        # (an address compared: ``if (!p) return``)
        elif isinstance(user, Call) and off == 0 and u.index == 0 \
                and (user.callee_name or "") in FREE_NAMES and not isinstance(a, Alloca):
            pass        # the block freed
        elif isinstance(user, Call) and u.index == 0 and _zeroes(user):
            pass        # zero bytes: null pointers, zero floats (``UD u = {A, Ea, {0}}``)
        elif isinstance(user, Call) and u.index == 0 and off is not None \
                and (leaves := constant_leaves(user, dl)) is not None:
            for o, v in leaves:     # (``sort_ctx ctx = {perm, -1}``)
                if v.type.is_pointer:
                    st.ptrs.append((v, off + o))
                elif floatish(v.type):
                    st.floats = True
                else:
                    st.int_stores.append((off + o, dl.store_size(v.type)))
        elif isinstance(user, Call) and u.index == 0 \
                and _copied_param(user, off, dl) is not None:
            param, fields, floats = _copied_param(user, off, dl)
            st.copies.append((param, off, fields))
            st.floats |= floats
        elif isinstance(user, Call) and u.index < 2 and off is not None \
                and _moved_within_or_out(user, u.index, a, off, dl, st):
            pass
        elif isinstance(user, Call) and _passed_as_slot(user, u.index, st, off, depth):
            pass
        elif isinstance(user, Call) and _passed_to_comparator(user, u.index, st, off, depth):
            pass
        elif isinstance(user, Call) and _shared_with_region(user, u.index, st, off, depth):
            pass
        elif isinstance(user, Call) \
                and _read_by_parallel_region(user, u.index) is not None:
            for t in _read_by_parallel_region(user, u.index):
                st.floats |= floatish(t)
                if t.is_pointer:
                    st.ptr_loads.append(None)
                    st.derefs.append((None, None))
                elif has_pointer(t):
                    ok = False
        else:
            ok = False
        if not ok:
            return None
    return None if st.pointer_bits_as_integers(dl.store_size(a.type)) else st
