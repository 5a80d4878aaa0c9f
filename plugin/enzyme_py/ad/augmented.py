"""Reverse mode, the forward sweep: ``augmented_P`` is P with shadow computations
(shadow GEPs, allocations and pointer stores), a counter per loop, the saves of the
values that undone stores overwrite, and the augmented forward of every call.
It fills the value context (``ReverseGen`` in ``reverse.py``): the map from P's values
to the copies (``vmap``), their shadows (``sh_aug``), and what each call wrote, for the
reverse sweep."""

from __future__ import annotations

from ..analysis.activity import address_source, floatish, pointer_aggregate
from ..analysis.effects import call_effect, returns_text
from ..ir import types as T
from ..ir.instructions import (Alloca, AtomicRMW, BinaryOp, Call, Cast, CmpXchg, ExtractValue, GEP,
                               InsertValue, Invoke, Load, Phi, Ret, Select, Store)
from ..ir.values import Argument, ConstantInt, ConstantNull, Poison, Undef, ZeroInit
from . import mpi
from .dispatch import Dispatched, is_indirect, resolve
from .sort import aug_qsort
from .emit import (copy_body, passes_shadow, pointer_global_check, shadow_address,
                   sync_text_objects)
from .errors import (ADError, external_call_error, indirect_call_error, merged_copy_error,
                     no_shadow_rule_error, check_copy_into_unshadowed, check_const_pointers_copied,
                     check_pointer_escape,
                     unshadowed_atomic_error, unshadowed_store_error, untyped_copy_error)
from .kinds import check as check_kind, check_never, check_nonlocal_jump
from . import openmp
from .libc import fill_shadow, shadowed_writes, written
from .rules import libm_rule, reduction_rule, struct_math_rule
from .reverse_common import (_dead_pointer_web, _mem_intrinsic)


def _int_copy_kinds(ptrs, w) -> set:
    """What the memory an integer of ``w`` bits is copied between holds: the objects'
    kinds, or, where those admit a floating-point value of that width, the byte-offset
    analysis's for exactly the ``w // 8`` bytes moved."""
    from ..analysis.types import byte_kinds, function_of, memory_kinds, pointee_kinds
    kinds = memory_kinds(ptrs)
    if w < 32:
        # a byte of a float copied on its own (a generic swap, byte by byte): the
        # copies' own accesses say "integer" -- any float the byte-offset analysis
        # finds at those bytes counts too
        fn = next((f for f in map(function_of, ptrs) if f is not None), None)
        if fn is not None:
            kinds = kinds | pointee_kinds(fn.parent, ptrs, w // 8)
        return kinds
    if _no_float_of_width(kinds, w):
        return kinds
    # the objects hold integers and floats of this width (``{int64_t id; double w}``):
    # what the byte-offset analysis finds at exactly the bytes moved, when that is one kind
    fn = next((f for f in map(function_of, ptrs) if f is not None), None)
    refined = pointee_kinds(fn.parent, ptrs, w // 8) if fn is not None else set()
    return refined if refined and len(refined) == 1 else byte_kinds(ptrs, w // 8, kinds)


def _no_float_of_width(kinds, w) -> bool:
    """Type analysis's ``kinds`` of memory an integer of ``w`` bits is copied from/to
    hold no floating-point value of that width (an integer, a pointer)."""
    return bool(kinds) and "float-other" not in kinds and not (
        w == 32 and "float" in kinds or w == 64 and "double" in kinds
        or w not in (32, 64) and kinds & {"double", "float"})


def _copy_web(load, store):
    """(the float kind of the integer's width, the byte-offset analysis, what
    ``typetree.copied_kinds`` finds at both ends of the copy ``store load, q``), or
    None for an integer of no float's width."""
    kind = {64: "double", 32: "float"}.get(load.type.width)
    if kind is None or not isinstance(load, Load) or load.function is None:
        return None
    from ..analysis.typetree import MemoryTypes
    ptrs, n = [load.operand(0), store.operand(1)], load.type.width // 8
    types = MemoryTypes.of(store.module, ptrs)
    return kind, types, types.copied_kinds(ptrs[0], n) | types.copied_kinds(ptrs[1], n)


def carried_float(load, store):
    """The float type whose bits the integer copy ``store load, q`` moves, where the
    copies say so and the declarations do not: the program's own accesses of the bytes
    at both ends, and of every range integer copies move them to or from, read or write
    floats of the integer's width and nothing else (``typetree.copied_kinds``) -- a
    double ``memcpy``'d into a ``uint64_t`` field by one helper, the field assigned on
    as an integer (``c.bits = a.bits``), ``memcpy``'d back into a double by another.
    The field's declared type (``tag_declared_integers``, TBAA) says integer; moved as
    one, the derivative was lost, silently.  Else None."""
    web = _copy_web(load, store)
    if web is None or web[2] != {web[0]}:
        return None
    return T.double if web[0] == "double" else T.float


def unknown_float_copy(load, store) -> bool:
    """Whether the integer copy ``store load, q`` may move a float's bits that nothing
    here can tell from integers: floats of its width are read or written where integer
    copies take these bytes, among other kinds (a float ``memcpy``'d into the
    ``uint32_t`` field of a record array whose fields the analysis folds together), and
    the source bytes show no access of their own (an argument's memory, only copied
    here).  Judged an integer by the declared field, the derivative was lost, silently;
    it is a compile error instead."""
    web = _copy_web(load, store)
    if web is None:
        return False
    kind, types, got = web
    return kind in got and not types.copied_kinds(load.operand(0), load.type.width // 8,
                                                  follow=False)


# a store of an integer into a field the source declares integer, tagged before the
# pre-AD optimisation turns the field's struct GEP into a byte offset (at -O0, without TBAA)
DECLARED_INT = "enzyme.int"


def tag_declared_integers(fn) -> int:
    """Tag (``!enzyme.int``) the stores of ``fn`` that write an integer into a field of
    a struct the source declares integer (or an element of such an array field), where
    no TBAA says so (-O0): after the pre-AD optimisation the store's address is a byte
    offset, and ``mirrored_integer`` could no longer tell.  Returns how many were
    tagged."""
    from ..analysis.types import indexed_kinds
    module, tag, n = fn.parent, None, 0
    for inst in fn.instructions():
        if not isinstance(inst, Store) or inst.get_metadata("tbaa") is not None:
            continue
        v = inst.operand(0)
        if not (v.type.is_int and 8 <= v.type.width <= 64):
            continue
        q = inst.operand(1)
        if indexed_kinds(q, v.type.width // 8, module.datalayout) == {"int"} \
                and _field_of_a_struct(q):
            tag = tag or module.add_metadata("!{}")
            inst.set_metadata(DECLARED_INT, tag)
            n += 1
    return n


def _field_of_a_struct(p) -> bool:
    """Whether the GEP ``p`` indexes a field of a struct (through the arrays it holds:
    ``s->idx[i]``), not of a union (``u.w[0]`` of ``union {double d; uint32_t w[2];}``
    is a piece of the double as much as an integer) nor of a bare array."""
    from ..analysis.types import is_union
    while isinstance(p, GEP):
        t = p.source_type
        if t.is_struct:
            return not is_union(t)
        p = p.operand(0)
    return False


def mirrored_integer(store) -> bool:
    """Whether ``store`` (into memory with a shadow) writes an integer the shadow gets
    too, as Enzyme does: a length, a capacity, a flag of a structure the derivative
    builds in its shadow (MATLAB Coder's ``emxArray`` sizes and ``canFreeData``, which
    the caller's ``emxFree`` of the shadow reads) -- where the declared layout of the
    field written (``tag_declared_integers`` kept it through the pre-AD optimisation),
    or the store's TBAA type, says integer (not a float's bits stored as an integer);
    else the byte-offset analysis of this round, where it is built and
    has analysed the store's function (a new analysis for a value of derivative code in
    a nested round would parse every function).  Only integers in those bytes."""
    from ..analysis.types import indexed_kinds, layout_kinds, pointee_kinds, tbaa_kind
    v, p = store.operand(0), store.operand(1)
    if not (v.type.is_int and 8 <= v.type.width <= 64) or isinstance(v, (Undef, Poison)):
        return False
    if isinstance(v, Load) and carried_float(v, store) is not None:
        return False    # a float's bits: the shadow gets the adjoint's copy, not these
    if store.get_metadata(DECLARED_INT) is not None:
        return True
    module = store.module
    n = v.type.width // 8
    got = indexed_kinds(p, n, module.datalayout) or layout_kinds(p, n, module.datalayout)
    if got:
        return got == {"int"}
    tbaa = tbaa_kind(store, module)
    if tbaa is not None:
        return tbaa == "int"
    from ..analysis.typetree import MemoryTypes
    scope = module.__dict__.get("typetree_scope")
    built = MemoryTypes._built.get(module)
    return scope is not None and built is not None and built._scope is scope \
        and store.function in built._analysed and pointee_kinds(module, [p], n) == {"int"}


def word_of_float(load, p, exclude=()) -> bool:
    """Whether the ``int32_t``/``int16_t`` word ``load`` reads and ``p`` receives may be
    a piece of a wider float -- the objects' kinds cannot say, the copy's own integers
    being among them (a generic ``copy(void *dst, const void *src, int bytes)`` over
    doubles: an indexed loop, ``*d++ = *s++``, or unrolled by -O2 into words at
    constant offsets; a union's words).  The declared types of the objects at either
    end decide where they say one thing (``types.declared_kinds``, through the helper's
    call sites: a ``double a[2]`` local, or an ``int idx[4]`` field of a struct beside
    doubles, which is integers); else (heap blocks, an object of both at an offset not
    known) the byte-offset analysis at exactly those bytes, without the copy's own
    accesses and the program's other bit moves (``exclude``): a wider float there and
    no integer, both ends addressed word by word (``_word_addressed``).  (A 16-bit
    word is checked only this way: a ``short`` beside a double in one object is
    common.)"""
    from ..analysis.types import declared_kinds, indexed_kinds, layout_kinds, pointee_kinds
    w = load.type.width
    if w not in (16, 32):
        return False
    wider = {"double"} if w == 32 else {"double", "float"}
    module = load.function.parent
    dl = module.datalayout
    declared = set()
    for q in (load.operand(0), p):
        # the element a GEP into a struct or array type indexes (``m->sp[i][j]``)
        got = indexed_kinds(q, w // 8, dl) or layout_kinds(q, w // 8, dl)
        if got:
            declared |= got
            continue
        # the first word of an indexed loop, ``s[i]`` at i = 0
        if isinstance(q, GEP) and q.source_type == load.type and len(q.indices) == 1 \
                and not isinstance(q.indices[0], ConstantInt):
            q = q.operand(0)
        declared |= declared_kinds(q, w // 8, dl)
    declared.discard("unknown")     # (a union says nothing)
    if declared and not declared & wider:
        return False
    if declared & wider and "int" not in declared:
        return True
    if not (_word_addressed(load.operand(0), w) and _word_addressed(p, w)):
        return False
    kinds = pointee_kinds(module, [load.operand(0), p], w // 8, exclude=tuple(exclude))
    return bool(kinds & wider) and "int" not in kinds


def _word_addressed(q, w) -> bool:
    """Whether ``q`` addresses memory word by word: not at a byte offset computed at run
    time (``p + off`` over ``i8``: a ``va_arg`` from the register save area, whose
    integers and doubles the byte-offset analysis cannot keep apart) -- but into a local
    array (an array of ``union {double d; uint32_t w[2];}`` copied word by word at -O0)
    --, nor through a pointer read from a ``va_list``."""
    from ..analysis.activity import underlying_object
    computed = False
    while True:
        if isinstance(q, GEP):
            if any(not isinstance(i, ConstantInt) for i in q.indices) \
                    and not (q.source_type.is_int and q.source_type.width == w):
                computed = True
            q = q.operand(0)
        elif isinstance(q, Cast) and q.opcode in ("bitcast", "addrspacecast"):
            q = q.operand(0)
        else:
            break
    if computed:
        return isinstance(q, Alloca)
    if isinstance(q, Load):
        lst = underlying_object(q.operand(0))
        return not any(isinstance(u, Call) and (u.callee_name or "").startswith(
            ("llvm.va_start", "llvm.va_copy")) for _, u in _users_through(lst, (GEP, Cast)))
    return True


def _bit_moves(functions) -> tuple:
    """``AugmentedForward._bit_moves`` of ``functions``."""
    out = []
    for i in (i for f in functions for i in f.instructions()):
        if isinstance(i, Load) and i.type.is_int and i.type.width in (32, 64) \
                and i.get_metadata("tbaa") is None and i.uses \
                and all(isinstance(u.user, Store) and u.index == 0 for u in i.uses):
            out.append(i)
            out.extend(u.user for u in i.uses)
        elif isinstance(i, Store) and isinstance(i.operand(0), ConstantInt) \
                and i.operand(0).type.width in (32, 64) \
                and i.get_metadata("tbaa") is None \
                and (i.operand(0).value == 0 or abs(i.operand(0).value) > 4096):
            out.append(i)
    return tuple(out)


def _text_byte(load) -> bool:
    """Whether the byte ``load`` reads is also compared with 0 -- text copied up to its
    terminating NUL (``while ((*d++ = *s++))``) -- or is a ``std::string``'s character
    (a one-character string copied by its constructor): never the bytes of a float."""
    from ..analysis.types import string_characters
    from ..ir.instructions import ICmp
    return load.type.width == 8 and (any(
        isinstance(u.user, ICmp) and any(isinstance(o, ConstantInt) and o.value == 0
                                         for o in u.user.operands) for u in load.uses)
        or string_characters(load.operand(0)))


def merged_copy_of_floats(v, p, shadowed, dl):
    """The loads that an integer (or vector of integers) ``v`` stored to ``p`` copies
    through phis, selects, vector shuffles or freezes (a byte-wise swap that clang
    unrolls: bytes loaded in one block, stored after a merge; ``<16 x i8>`` halves
    swapped by a shuffle) where they read memory with a shadow that may hold
    floating-point values of the bytes moved, else None.  Neither sweep moves
    derivatives through such a merge, so a copy of floats this way would lose them
    silently: the generators refuse it, as they refuse a byte of a float copied by
    itself."""
    from ..analysis.types import indexed_kinds, layout_kinds, merge_leaves, string_object_bytes
    ty = v.type
    el = ty.element if ty.is_vector else ty
    if not el.is_int or isinstance(v, Load) and not ty.is_vector \
            or not ty.is_vector and ty.width not in (8, 32, 64, 128):
        return None     # (a plain integer load: the store's own rules; a short is a short)
    if string_object_bytes(p, dl, dl.store_size(ty)):
        return None     # a std::string's bytes (its inline characters, chosen by length)
    leaves = merge_leaves(v, vectors=True)
    if leaves is None:
        return None
    loads = []
    for x in leaves:
        if isinstance(x, Load):
            loads.append(x)
        elif not isinstance(x, (ConstantInt, Undef, Poison, ZeroInit)) \
                and x.is_instruction or isinstance(x, Argument):
            return None     # an integer computed (or passed): not a copy
    loads = [ld for ld in loads if ld.operand(0) in shadowed and not _text_byte(ld)
             and not string_object_bytes(ld.operand(0), dl, dl.store_size(ld.type))
             and layout_kinds(ld.operand(0), dl.store_size(ld.type), dl) != {"int"}
             and indexed_kinds(ld.operand(0), dl.store_size(ld.type), dl) != {"int"}]
    if not loads:
        return None
    w = dl.store_size(ty) * 8
    kinds = _int_copy_kinds([ld.operand(0) for ld in loads] + [p], w)
    return None if _no_float_of_width(kinds, w) else loads


def float_bytes_lost(v, p, act) -> bool:
    """Whether ``store v, p`` copies the bytes of a float as an integer where no rule
    moves their derivative: ``v`` an integer loaded from memory whose object has a
    shadow -- through a pointer without one (activity gives none to a byte pointer only
    integers are read through), or into ``p`` without one while the program reads
    ``p``'s object as floats (``unsigned char *q = (void *)&b; q[i] = p[i];`` at -O0:
    ``b`` got no shadow, since no float was stored into it, and its value came back
    without derivative, silently).  A plain copy between shadowed pointers has its own
    rules; a byte copied into a buffer of bytes (a hash of a double's bytes) is not
    this."""
    from ..analysis.activity import underlying_object
    from ..analysis.types import FLOAT_KINDS, memory_kinds
    if not (isinstance(v, Load) and v.type.is_int and v.type.width in (8, 16, 32, 64, 128)) \
            or _text_byte(v):
        return False
    src, shadowed = v.operand(0), act.shadowed
    obj = underlying_object(src)
    if src in shadowed and p in shadowed or not (
            src in shadowed or obj in shadowed or obj in act.unshadowed_locals
            and _holds_active_value(obj, act)):
        return False
    w = v.type.width
    if (w == 16 or _no_float_of_width(_int_copy_kinds([src], w), w)) \
            and not word_of_float(v, p, (v,) + tuple(v.users)):
        return False
    return p in shadowed or bool(memory_kinds([p]) & FLOAT_KINDS)


def null_at_every_call(p, fn, act, ctx) -> bool:
    """Whether ``p`` points into a parameter of ``fn`` without a shadow that every call
    of ``fn`` in the same derivative call passes as a null pointer (``null_arguments``):
    an optional output not asked for (``ephem_state(jd, pos, NULL)`` with ``if (vel)
    vel[i] = ...``), whose stores never run."""
    from ..analysis.activity import underlying_object
    base = underlying_object(p)
    return isinstance(base, Argument) and base.parent is fn and base not in act.shadowed \
        and base.index in null_arguments(fn, ctx)


def null_arguments(fn, ctx) -> frozenset:
    """The indices of the pointer parameters of ``fn`` that every call of ``fn`` in the
    same derivative call passes as a null constant (none for a function a call site
    differentiates: its caller is the program).  (``ctx``: the reverse-mode context,
    with the entries and the functions' copies.)"""
    if fn in getattr(ctx, "entries", ()):
        return frozenset()
    memo = ctx.__dict__.setdefault("null_arguments", {})
    if fn not in memo:
        calls = [i for f in _run_together(fn, ctx) for i in f.instructions()
                 if isinstance(i, (Call, Invoke)) and i.called_function is fn]
        memo[fn] = frozenset(
            a.index for a in fn.args if a.type.is_pointer and calls and all(
                a.index < len(c.args) and isinstance(c.args[a.index], ConstantNull)
                for c in calls))
    return memo[fn]


def _run_together(fn, ctx) -> set:
    """The functions the derivative call differentiating ``fn`` runs (``ctx``: the
    reverse-mode context, with the entries and the functions' copies)."""
    from ..analysis.callgraph import run_together
    return run_together(fn, getattr(ctx, "clone_of", {}).values(), getattr(ctx, "entries", ()))


def _never_written(g) -> bool:
    """Whether nothing in the program (the whole of it is linked here) writes the global
    ``g`` or lets its address go anywhere but loads and the source of copies: it holds
    its initialiser all along."""
    from ..ir.walk import BoundedWalk
    walk = BoundedWalk(g, 256)
    for x in walk:
        for u in x.uses:
            user = u.user
            if isinstance(user, (GEP, Cast)) and u.index == 0 \
                    or not user.is_instruction and getattr(user, "opcode", None) in (
                        "getelementptr", "bitcast"):
                walk.add(user)
            elif not (isinstance(user, Load) or isinstance(user, Call) and u.index == 1
                      and _mem_intrinsic(user.callee_name or "") in ("memcpy", "memmove")):
                return False
    return not walk.exceeded


def _escapes(alloc, depth=3) -> str:
    """Whether the block ``alloc`` returns is stored into memory of its function's
    arguments or of a global (an output array allocated inside: MATLAB Coder's output
    ``emxArray``) and never freed in its function: the caller may own it after the
    call (``AugmentedForward._frees_loaded_pointers`` says whether nothing else frees
    it).  A block returned (an allocation wrapper, ``double *alloc_vec(int n)``)
    escapes where it does so from a direct call of its function, ``depth`` calls up:
    ``"all"`` where every such call hands it on, ``"some"`` where others do not (the
    wrapper also makes temporaries: whether the program frees the block is then known
    at run time only), ``""`` where it does not escape."""
    from ..analysis.activity import underlying_object
    from ..analysis.effects import FREE_NAMES
    from ..analysis.globals import heap_block_only
    stored = ""
    for x, u in _users_through(alloc, (GEP, Cast, Phi, Select)):
        if isinstance(u, Store) and u.operand(0) is x:
            base = underlying_object(u.operand(1))
            # (a file-scope workspace pointer is no way out: the next derivative call
            # starts its shadow afresh, ``heap_block_only``)
            if isinstance(base, Argument) or getattr(base, "is_global", False) \
                    and not heap_block_only(base):
                stored = stored or "all"
        elif isinstance(u, Call) and (u.callee_name or "") in FREE_NAMES:
            return ""
        elif isinstance(u, Ret) and u.value is x:
            f = u.function
            calls = [c.user for c in f.uses]
            if not (depth and calls and all(isinstance(c, Call) and c.called_function is f
                                            for c in calls)):
                return ""
            up = {_escapes(c, depth - 1) for c in calls}
            if up == {"all"}:
                stored = stored or "all"
            elif up != {""}:
                stored = "some"
    return stored


def _holds_active_value(obj, act) -> bool:
    """Whether a floating-point value with a derivative is stored into the local ``obj``
    (directly or at a GEP off it) -- one activity gave no shadow because nothing reads
    it back as a float (the value is then among ``act.pruned``: active by forward
    reasoning, reaching no output)."""
    return any(isinstance(u, Store) and u.operand(1) is x
               and (u.operand(0) in act.active or u.operand(0) in act.pruned)
               for x, u in _users_through(obj, (GEP, Cast)))


def _users_through(v, kinds, limit=64):
    """(value, user) for the users of ``v`` and of the ``kinds`` of instructions
    derived from it (GEPs, casts, ...), at most ``limit`` values deep."""
    work, seen = [v], set()
    while work:
        x = work.pop()
        if x in seen or len(seen) > limit:
            continue
        seen.add(x)
        for u in x.users:
            yield x, u
            if isinstance(u, kinds):
                work.append(u)


def _select_leaves(v, depth=4):
    """The integer loads a tree of selects chooses between, or None when some arm is
    not a load."""
    if isinstance(v, Load):
        return [v]
    if isinstance(v, Select) and depth:
        a, b = _select_leaves(v.operand(1), depth - 1), _select_leaves(v.operand(2), depth - 1)
        if a is not None and b is not None:
            return a + b
    return None


class AugmentedForward:
    """Builds ``gen.aug`` from ``gen.P`` (``gen``: the ``ReverseGen`` value context):
    the forward sweep of reverse mode."""

    def __init__(self, gen):
        self.gen = gen
        self.ctx, self.e, self.P, self.act, self.cfg, self.loops, self.ow = (
            gen.ctx, gen.e, gen.P, gen.act, gen.cfg, gen.loops, gen.ow)
        self.mirrored = {}      # call -> its shadow, a copy of the call on the shadows
        self.ret_shadows = {}   # call -> the shadow of the pointer it returns
        # for the reverse sweep: per call, what it wrote ...
        gen.mem_kind = {}       # memcpy/memmove/memset -> the kind of memory it copies
        gen.mem_maybe_int = set()   # ... of those, the ones whose bytes may be integers
        gen.write_sizes = {}    # libc call -> [(argument, bytes written)]
        gen.out_shadows = {}    # posix_memalign -> the shadow of its out-pointer
        gen.mem_fields = {}     # mixed-struct copy -> its float fields
        gen.mem_strides = {}    # ... of those, copies of n structs -> the struct's size
        gen.escaping_blocks = set()     # allocations whose shadow the caller frees
        gen.maybe_freed_blocks = set()  # ... unless the program freed them (runtime_escape)
        gen.realloc_moved = {}          # escaping realloc -> bytes of the old shadow copied
        gen.float_copies = {}   # integer store copying a double/float -> its load, type

    def build(self):
        gen = self.gen
        P, aug, act = self.P, gen.aug, self.act
        prim, shad, i = gen._arg_maps(aug)
        gen.tape_aug = aug.args[i]
        vmap = dict(prim)
        copy_body(P, aug, vmap)
        gen.vmap = vmap
        gen.sh_aug = dict(shad)
        e = self.e
        gen.restore_old = {}
        gen.replaced_calls = {}
        e = self.e
        pending_phis = []
        check_never(self.cfg.rpo, act, self.ctx.err_loc)
        for b in self.cfg.rpo:
            for inst in list(b.instructions):
                A = vmap[inst]
                check_kind(inst, act, lambda i=inst: self.ctx.err_loc(i))
                if isinstance(inst, Invoke):
                    continue   # not involved (check_kind)
                if isinstance(inst, Call):
                    check_nonlocal_jump(inst, lambda i=inst: self.ctx.err_loc(i))
                    self._aug_call(inst, A)
                elif isinstance(inst, AtomicRMW):
                    self._aug_atomic(inst)
                if inst in act.shadowed and not isinstance(inst, Argument):
                    self._aug_shadow_def(inst, A, pending_phis)
                if isinstance(inst, Store):
                    self._aug_store(inst, A)
                    if inst in self.ow.restores:   # the value it overwrites (overwrite.py)
                        old = Load(inst.operand(0).type, A.operand(1), align=inst.align)
                        old.insert_before(A)
                        gen.restore_old[inst] = old
        if gen.ret_shadow:
            for b in self.cfg.rpo:
                r = b.terminator
                if isinstance(r, Ret) and r.value is not None:
                    ar = vmap[r]
                    e.position_before(ar)
                    pv = ar.value
                    sv = gen._sh_aug(r.value, r) if r.value in self.act.shadowed or not (
                        r.value.is_instruction or isinstance(r.value, Argument)) \
                        else ZeroInit(r.value.type)  # callers see an unshadowed result
                    agg = e.insertvalue(Undef(gen.aug.return_type), pv, [0])
                    agg = e.insertvalue(agg, sv, [1])
                    ar.set_operand(0, agg)
        for inst, S in pending_phis:
            for v, blk in inst.incoming:
                S.add_incoming(gen._sh_aug(v, inst), vmap[blk])
        # predecessor index for blocks with several predecessors
        gen.pred_phi = {}
        for b in self.cfg.rpo:
            preds = self.cfg.preds[b]
            if len(preds) > 1:
                ab = vmap[b]
                phi = Phi(T.i64)
                ab.insert(0, phi)
                for u in ab.uses:
                    user = u.user
                    if user.is_instruction and user.is_terminator and user.parent is not None:
                        pb = user.parent
                        src = next((p for p in preds if vmap[p] is pb), None)
                        k = preds.index(src) if src is not None else 0
                        phi.add_incoming(ConstantInt(T.i64, k), pb)
                gen.pred_phi[b] = phi
        self._aug_loop_counters()
        self._stack_shadows()

    def _aug_loop_counters(self):
        """An i64 counter per loop, 0 on entry, +1 per iteration (header executions)."""
        gen = self.gen
        vmap = gen.vmap
        gen.aiv = {}
        for lp in self.loops.loops:
            h = vmap[lp.header]
            iv = Phi(T.i64)
            h.insert(0, iv)
            nxt = BinaryOp("add", iv, ConstantInt(T.i64, 1), flags=("nuw", "nsw"))
            nxt.insert_before(h.first_non_phi)
            for p in self.cfg.preds[lp.header]:
                # one entry per edge: a switch may branch to the header on several cases
                for _ in range(sum(s is lp.header for s in p.successors)):
                    iv.add_incoming(nxt if p in lp.blocks else ConstantInt(T.i64, 0),
                                    vmap[p])
            gen.aiv[lp] = iv

    def _stack_shadows(self):
        """Shadows of allocas outside loops that the forward sweep never touches (only
        adjoints go there, in the reverse sweep) become allocas of the reverse function."""
        gen = self.gen
        gen.stack_shadow = {}
        gen.stack_shadow_src = []
        for b in self.cfg.rpo:
            if self.loops.in_loop(b):
                continue
            for inst in b.instructions:
                if not isinstance(inst, Alloca) or inst not in self.act.shadowed:
                    continue
                if inst.count is not None and not isinstance(inst.count, ConstantInt):
                    continue
                S = gen.sh_aug.get(inst)
                web = _dead_pointer_web(S)
                if web is None:
                    continue
                for x in web:
                    x.drop_all_references()
                for x in web:
                    x.remove_from_parent()
                for k in [k for k, v in gen.sh_aug.items() if v in web]:
                    del gen.sh_aug[k]
                gen.stack_shadow_src.append(inst)

    def _aug_shadow_def(self, inst, A, pending_phis):
        gen = self.gen
        e, vmap = self.e, gen.vmap
        if isinstance(inst, Cast) and inst.opcode == "inttoptr":
            # an address rounded as an integer: the same on the shadow's (emit.py)
            e.position_before(A.parent.instructions[A.parent.index_of(A) + 1])
            S = shadow_address(e, inst, gen._sh_aug(address_source(inst), inst),
                               lambda v: vmap[v] if v in vmap else v.clone())
        elif isinstance(inst, (GEP, Cast)):
            S = A.clone({})
            S.metadata = []
            S.set_operand(0, gen._sh_aug(inst.operand(0), inst))
            S.name = None
            S.insert_after(A)
        elif isinstance(inst, Phi):
            S = Phi(inst.type)
            S.insert_after(A)
            pending_phis.append((inst, S))
        elif isinstance(inst, ExtractValue):
            S = ExtractValue(gen._sh_aug(inst.operand(0), inst), inst.indices)
            S.insert_after(A)
        elif isinstance(inst, InsertValue):
            # a struct of pointers (std::pair<node *, node *>): shadow pointers where the
            # primal has pointers, the primal integers elsewhere
            val = inst.operand(1)
            sv = gen._sh_aug(val, inst) if val.type.is_pointer \
                or pointer_aggregate(val.type) else A.operand(1)
            S = InsertValue(gen._sh_aug(inst.operand(0), inst), sv, inst.indices)
            S.insert_after(A)
        elif isinstance(inst, Select):
            S = Select(A.operand(0), gen._sh_aug(inst.operand(1), inst),
                       gen._sh_aug(inst.operand(2), inst))
            S.insert_after(A)
        elif isinstance(inst, Load):
            S = Load(inst.type, gen._sh_aug(inst.operand(0), inst), align=inst.align)
            S.insert_after(A)
            check = pointer_global_check(self.ctx.module, inst, self.ctx.shadow_globals)
            if check is not None:
                checked = Call(check.function_type, check, [S, A])
                checked.insert_after(S)
                S = checked
        elif isinstance(inst, Alloca):
            dl = self.ctx.module.datalayout
            size = ConstantInt(T.i64, dl.size_in_bytes(inst.allocated_type))
            nxt = A.parent.instructions[A.parent.index_of(A) + 1]
            e.position_before(nxt)
            if inst.count is not None:
                n = vmap[inst.count] if inst.count in vmap else inst.count.clone()
                if n.type != T.i64:
                    n = e.cast("sext" if n.type.width < 64 else "trunc", n, T.i64)
                size = e.binop("mul", n, size)
            S = self._shadow_block(size, ConstantInt(T.i64, inst.align or 1))
        elif isinstance(inst, Call):
            name = inst.callee_name or ""
            if inst in gen.replaced_calls:
                # the augmented callee returned {primal, shadow}
                gen.sh_aug[inst] = self.ret_shadows[inst]
                return
            if inst in self.mirrored:
                gen.sh_aug[inst] = self.mirrored[inst]
                return
            eff = call_effect(name)
            if eff is None or eff.kind != "alloc" or eff.out is not None:
                raise ADError(f"call to '{name}' returns a pointer that may carry derivatives; "
                              "not supported yet", location=self.ctx.err_loc(inst),
                              hint="inline the function or return through an argument")
            nxt = A.parent.instructions[A.parent.index_of(A) + 1]
            e.position_before(nxt)
            args = A.args
            if name == "realloc" and _escapes(inst):
                S = self._escaping_realloc(inst, A, nxt)
            elif eff.frees is not None and inst.args[eff.frees] in self.act.shadowed:
                S = e.call(gen._rt("__enzyme_py_shadow_realloc"),
                           [gen._sh_aug(inst.args[eff.frees], inst), args[1]])
            elif eff.frees is None and eff.align is None and (escape := _escapes(inst)):
                # handed to the caller (stored into an argument's memory or a global, and
                # never freed here: an output array grown inside): its shadow is the
                # caller's to free, with free(), as the block is -- a block of the C
                # library's, which the reverse sweep leaves alone.  Where the code frees
                # pointers it reads from memory (a second growth frees the first new
                # block), or an allocation wrapper also makes temporaries the program
                # frees, whether the program freed it is recorded at run time
                # (``runtime_escape``) and the reverse sweep frees the shadow if so
                calloc = e.declare("calloc", T.ptr, [T.i64, T.i64])
                S = e.call(calloc, [ConstantInt(T.i64, 1), written(e, None, eff.size, args, A)])
                gen.escaping_blocks.add(inst)
                if self._frees_loaded_pointers() or escape == "some":
                    e.call(gen._rt("__enzyme_py_escaping_add"), [S])
                    gen.maybe_freed_blocks.add(inst)
            else:
                # (a realloc of a block without a shadow held constant data: zero adjoint)
                S = self._shadow_block(written(e, None, eff.size, args, A),
                                       None if eff.align is None else args[eff.align])
        else:
            raise no_shadow_rule_error(inst, self.ctx.err_loc(inst))
        gen.sh_aug[inst] = S

    def _escaping_realloc(self, inst, A, nxt):
        """The shadow of ``realloc(old, n)`` whose block is handed to the caller (stored
        into an argument's memory, ``_escapes``: a vector in an output struct grown
        inside): a plain ``calloc`` block, as the caller's ``free`` wants it, of the
        new block's usable size, holding the old shadow's first bytes -- as many as the
        old block had (a shadow block's own size, ``_pool_shadow``; else
        ``malloc_usable_size`` of the primal before the ``realloc``: the old shadow,
        ours or the caller's, is at least that large).  The old shadow stays
        alive for the reverse sweep, which moves those bytes' adjoints back into it
        (``realloc_moved``); the new one goes to the registry of escaping shadows
        (``runtime_escape``), and the old one is marked freed there: a block an earlier
        growth made is freed at the reverse of its allocation, the last one is the
        caller's.  (The caller's own old shadow block is left to leak.)  Emitted before
        ``nxt``, the instruction after the ``realloc``."""
        e, gen = self.e, self.gen
        i64 = T.i64
        usable = e.declare("malloc_usable_size", i64, [T.ptr])
        shadowed = inst.args[0] in self.act.shadowed
        if shadowed and not self._pool_shadow(inst.args[0]):
            e.position_before(A)        # (the old block's size, before it is freed)
            had = e.call(usable, [A.args[0]])
            e.position_before(nxt)
        calloc = e.declare("calloc", T.ptr, [i64, i64])
        S = e.call(calloc, [ConstantInt(i64, 1), e.call(usable, [A])])
        e.call(gen._rt("__enzyme_py_escaping_add"), [S])
        gen.escaping_blocks.add(inst)
        gen.maybe_freed_blocks.add(inst)
        moved = ConstantInt(i64, 0)
        if shadowed:
            old = gen._sh_aug(inst.args[0], inst)
            if self._pool_shadow(inst.args[0]):
                had = e.call(gen._rt("__enzyme_py_shadow_size"), [old])
            n = A.args[1] if A.args[1].type == i64 else e.cast("zext", A.args[1], i64)
            moved = e.select(e.icmp("ult", had, n), had, n)
            memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, i64, T.i1])
            e.call(memcpy, [S, old, moved, ConstantInt(T.i1, 0)])
            e.call(gen._rt("__enzyme_py_escaping_mark"), [old])
        gen.realloc_moved[inst] = moved
        return S

    def _pool_shadow(self, p) -> bool:
        """Whether the shadow of the pointer ``p`` is a block of
        ``__enzyme_py_shadow_alloc`` (its size in its header): ``p`` is a block the
        code allocates right here, not handed to the caller."""
        from ..analysis.activity import underlying_object
        a = underlying_object(p)
        return isinstance(a, Call) and a in self.act.shadowed \
            and a not in self.gen.escaping_blocks and a not in self.gen.replaced_calls \
            and a not in self.mirrored \
            and (eff := call_effect(a.callee_name or "")) is not None and eff.kind == "alloc" \
            and eff.align is None and eff.out is None

    def _aug_store(self, inst, A):
        gen = self.gen
        v, p = inst.operand(0), inst.operand(1)
        if p in self.act.shadowed:
            if v.type.is_pointer or pointer_aggregate(v.type):
                if v not in self.act.shadowed and (v.is_instruction or isinstance(v, Argument)) \
                        and not self.act.may_hold_shadowed_pointers(p):
                    return  # a local that only ever holds pointers without shadows
                sv = gen._sh_aug(v, inst)
                st = Store(sv, gen._sh_aug(p, inst), align=inst.align)
                st.insert_after(A)
            elif isinstance(v, Cast) and v.opcode == "ptrtoint" \
                    and v.operand(0) in self.act.shadowed:
                # a pointer stored as an integer (InstCombine makes `unique_ptr`'s
                # member store `store i64 (ptrtoint p)`): its shadow, the same way
                sv = Cast("ptrtoint", gen._sh_aug(v.operand(0), inst), v.type)
                sv.insert_after(A)
                Store(sv, gen._sh_aug(p, inst), align=inst.align).insert_after(sv)
            elif not floatish(v.type) and v.is_instruction and isinstance(v, Load) \
                    and v.operand(0) in self.act.shadowed and v.type.is_int \
                    and v.type.width in (8, 16, 32, 64, 128) and not self._int_by_layout(v) \
                    and not _text_byte(v) and not self._string_bytes(v, p):
                w = v.type.width
                # (into a field the source declares integer: ``tag_declared_integers``,
                # or the store's struct-path TBAA tag)
                from ..analysis.types import tbaa_integer_field
                declared_int = inst.get_metadata(DECLARED_INT) is not None \
                    or tbaa_integer_field(inst)
                kinds = {"int"} if w == 16 or declared_int \
                    else _int_copy_kinds([v.operand(0), p], w)
                if (declared_int or _no_float_of_width(kinds, w) and not word_of_float(
                        v, p, (v, inst) + self._bit_moves())) and carried_float(v, inst) is None:
                    if unknown_float_copy(v, inst):
                        raise untyped_copy_error(self.ctx.err_loc(inst))
                    # no floating-point value of this width there: an integer (a C++
                    # key) or a pointer (an iterator copied at -O0); for pointers, the
                    # same copy of the shadow bytes
                    if "ptr" in kinds and w == 64:
                        sv = Load(v.type, gen._sh_aug(v.operand(0), inst), align=v.align)
                        sv.insert_after(A)
                        Store(sv, gen._sh_aug(p, inst), align=inst.align).insert_after(sv)
                    elif mirrored_integer(inst):
                        Store(A.operand(0), gen._sh_aug(p, inst),
                              align=inst.align).insert_after(A)
                    return
                ty = self._float_copy(v, inst)
                if ty is not None:
                    gen.float_copies[inst] = (v, ty)
                    return
                raise untyped_copy_error(self.ctx.err_loc(inst))
            elif isinstance(v, Select) and v.type.is_int and v.type.width in (8, 32, 64, 128) \
                    and _select_leaves(v) is not None:
                self._select_copy(v, inst, p)
            elif not floatish(v.type) and merged_copy_of_floats(
                    v, p, self.act.shadowed, self.ctx.module.datalayout) is not None:
                raise merged_copy_error(self.ctx.err_loc(inst))
            elif float_bytes_lost(v, p, self.act):
                raise merged_copy_error(self.ctx.err_loc(inst), lost=True)
            elif mirrored_integer(inst):
                Store(A.operand(0), gen._sh_aug(p, inst), align=inst.align).insert_after(A)
        elif v in self.act.active and p not in self.act.unshadowed_locals \
                and not (self.ctx.hooks and self.ctx.hooks.inactive_store(p)) \
                and not (self.P in getattr(self.ctx, "entries", ())
                         and self.act.write_only_argument(p)) \
                and not null_at_every_call(p, self.P, self.act, self.ctx):
            raise unshadowed_store_error(p, self.ctx.err_loc(inst))
        elif float_bytes_lost(v, p, self.act):
            raise merged_copy_error(self.ctx.err_loc(inst), lost=True)
        else:
            check_pointer_escape(v, p, self.act, self.ctx, self.ctx.err_loc(inst), inst)

    def _own_shadow_table(self, p, inst) -> bool:
        """Whether ``p`` points into a global holding its initialiser all along, whose
        pointers are their own shadows (text, functions, null: ``_constant_pointers``) --
        a static table of records copied into memory that has a shadow, which then gets
        the table's bytes."""
        consts = _constant_pointers(p)
        if consts is None:
            return False
        try:
            return all(self.gen._sh_aug(c, inst) is c for c in consts)
        except ADError:     # (a pointer to writable data)
            return False

    def _const_param_copied(self, inst) -> bool:
        """Whether the memcpy ``inst`` copies a by-value parameter without a shadow (an
        ``enzyme_const`` struct) whole into a local whose every pointer field holds
        pointers without a shadow only (``_Slot.const_offsets``): no shadow to copy."""
        from ..analysis.activity import base_offset, pointer_offsets
        from ..ir.attributes import named_type
        dst, src, n = inst.args[:3]
        if not (isinstance(src, Argument) and isinstance(n, ConstantInt)):
            return False
        dl = self.ctx.module.datalayout
        ty = named_type(src.attrs, "byval", src.parent.parent)
        fields = pointer_offsets(ty, dl) if ty is not None else None
        base, off = base_offset(dst, dl)
        st = self.act.slots.get(base)
        if fields is None or off is None or st is None \
                or n.value != dl.size_in_bytes(ty):
            return False
        if st.only_const_pointers(self.act):
            return True
        consts = st.const_offsets(self.act)
        return all(off + f in consts for f in fields)

    def _mark_freed(self, inst, A):
        """Before the program frees a pointer other than one it allocated right here
        (one it read from memory, got from a call -- an allocation wrapper's temporary
        -- or as an argument: a ``free_vec(v)``): its shadow, where that is a block in
        the registry of those handed to the caller (``runtime_escape``; any other is
        ignored there), is marked freed, for the reverse sweep to free it too."""
        from ..analysis.activity import underlying_object
        base = underlying_object(inst.args[0]) if inst.args else None
        if inst.args and inst.args[0] in self.act.shadowed \
                and not (isinstance(base, Call) and (eff := call_effect(base.callee_name or ""))
                         and eff.kind == "alloc") \
                and self._hands_blocks_to_caller():
            e = self.e
            e.position_before(A)
            e.call(self.gen._rt("__enzyme_py_escaping_mark"),
                   [self.gen._sh_aug(inst.args[0], inst)])

    def _hands_blocks_to_caller(self) -> bool:
        """Whether a function the same derivative call runs allocates a block it hands
        to the caller (``_escapes``): only then are the program's frees recorded."""
        return self._runs_any("hands_blocks_to_caller", lambda i: (
            isinstance(i, Call) and (eff := call_effect(i.callee_name or "")) is not None
            and eff.kind == "alloc" and eff.align is None
            and (eff.frees is None or i.callee_name == "realloc") and _escapes(i)))

    def _frees_loaded_pointers(self) -> bool:
        """Whether the differentiated functions free a pointer they read from memory (a
        destroy function freeing ``s->buf``), or grow a block with ``realloc``: a block
        stored into an argument's memory may then be freed later in the same derivative
        call, and its shadow must go at the reverse of its allocation, as any other."""
        from ..analysis.activity import underlying_object
        from ..analysis.effects import FREE_NAMES
        return self._runs_any("frees_loaded_pointers", lambda i: (
            isinstance(i, Call) and i.args and (
                (i.callee_name or "") in FREE_NAMES
                and isinstance(underlying_object(i.args[0]), Load)
                # (a block grown by realloc: its shadow is marked freed there)
                or i.callee_name == "realloc" and not isinstance(i.args[0], ConstantNull))))

    def _runs_any(self, key, pred) -> bool:
        """Whether ``pred`` holds for an instruction of a function the same derivative
        call runs (``_run_together``), memoised per function under ``key``."""
        memo = self.ctx.__dict__.setdefault(key, {})
        if self.P not in memo:
            memo[self.P] = any(pred(i) for f in _run_together(self.P, self.ctx)
                               for i in f.instructions())
        return memo[self.P]

    def _shadow_block(self, size, align=None):
        """A zeroed shadow block of ``size`` bytes (at the emitter), aligned as the primal
        block is (``align``: a value, None for malloc's 16): a local declared
        ``aligned(32)`` or an ``aligned_alloc(32, n)`` is read by aligned AVX loads, and
        so is its shadow."""
        e, gen = self.e, self.gen
        if align is None or isinstance(align, ConstantInt) and align.value <= 16:
            return e.call(gen._rt("__enzyme_py_shadow_alloc"), [size])
        if align.type != T.i64:
            align = e.cast("zext", align, T.i64)
        return e.call(gen._rt("__enzyme_py_shadow_alloc_aligned"), [size, align])

    def _select_copy(self, v, inst, p):
        """``store (select c, (load a), (load b)), p`` into memory with a shadow: one of two
        integer-typed copies chosen at run time (InstCombine merges the two branches of
        ``if (less) it = a; else it = b;`` over C++ iterators at -O0).  Pointers: the same
        select of the two shadows' bytes goes into p's shadow; an integer (or a choice
        that is not between loads of memory with a shadow): nothing; a value that may be
        floating-point: an error, like a plain integer copy."""
        leaves = _select_leaves(v)
        if leaves is None or any(ld.operand(0) not in self.act.shadowed for ld in leaves):
            return   # an integer computed, or read from memory without derivatives
        w = v.type.width
        kinds = _int_copy_kinds([ld.operand(0) for ld in leaves] + [p], w)
        if not _no_float_of_width(kinds, w):
            raise ADError("an integer-typed copy (a select between two loaded integers) of "
                          "memory that may hold floating-point values (type analysis could "
                          "not tell)", location=self.ctx.err_loc(inst),
                          hint="copy the values with their own type")
        if "ptr" not in kinds or w != 64:
            return
        gen = self.gen
        Store(self._select_shadow(v, inst), gen._sh_aug(p, inst),
              align=inst.align).insert_after(gen.vmap[inst])

    def _select_shadow(self, v, inst):
        """The shadow bytes of a select tree of integer loads: each load's shadow read
        right after the load, selected the same way."""
        gen = self.gen
        if isinstance(v, Load):
            sv = Load(v.type, gen._sh_aug(v.operand(0), inst), align=v.align)
            sv.insert_after(gen.vmap[v])
            return sv
        a, b = self._select_shadow(v.operand(1), inst), self._select_shadow(v.operand(2), inst)
        s = Select(gen.vmap[v.operand(0)], a, b)
        s.insert_after(gen.vmap[v])
        return s

    def _float_copy(self, load, store):
        """The float type an integer load/store pair copies (a small struct copied as an
        ``i64`` at -O0: ``std::variant``'s storage), when the byte-offset analysis finds
        exactly one floating-point type of the integer's width in the bytes moved, at
        both ends, and nothing between the two writes memory; else None.  Its reverse
        moves the adjoint like a copy of that type."""
        from ..analysis.types import pointee_kinds
        want = {64: ("double", T.double), 32: ("float", T.float)}.get(load.type.width)
        if want is None or self.gen.parallel or load.parent is not store.parent:
            return None
        ptrs = [load.operand(0), store.operand(1)]
        if pointee_kinds(self.ctx.module, ptrs, load.type.width // 8,
                         exclude=(load, store) + self._bit_moves()) != {want[0]} \
                and carried_float(load, store) is None:
            return None
        blk = load.parent.instructions
        for i in blk[blk.index(load) + 1:blk.index(store)]:
            if isinstance(i, (Store, AtomicRMW, CmpXchg)) or isinstance(i, Call) and \
                    not (i.callee_name or "").startswith(("llvm.lifetime.", "llvm.dbg.")):
                return None
        return want[1]

    def _bit_moves(self) -> tuple:
        """The integer accesses of the functions differentiated this round that move bits
        without saying what they are: the other integer copies (a load whose only uses
        store it) and stores of integer constants that may be a float's bits (``1.0``
        folded from a memcpy is ``store i64 4607182418800017408``; zero) -- as Enzyme's
        type analysis, only small integer constants say "integer".  Their "int" at the
        bytes they touch does not count against a float copy (``Q[m] = {x}``: every
        element of a vector of vectors assigned from an initializer list; a state
        serialised into a byte buffer by one helper and read back by another, each an
        8-byte ``memcpy`` at -O0)."""
        got = getattr(self, "_moves", None)
        if got is None:
            clones = tuple(getattr(self.ctx, "clone_of", {}).values())
            shared = getattr(self.ctx, "bit_moves", None)
            if shared is None:
                shared = self.ctx.bit_moves = _bit_moves(clones)
            got = self._moves = shared + (() if self.gen.P in clones else _bit_moves([self.gen.P]))
        return got

    def _string_bytes(self, load, dst):
        """Whether an integer copy moves a ``std::string``'s length, capacity or inline
        characters out of one string or into one (the other end may be a temporary whose
        accesses do not show the string: ``std::swap`` of a struct holding one): never a
        float (``types.string_value_bytes``)."""
        from ..analysis.types import string_value_bytes
        dl = self.ctx.module.datalayout
        n = dl.store_size(load.type)
        return string_value_bytes(load.operand(0), dl, n) or string_value_bytes(dst, dl, n)

    def _int_by_layout(self, load):
        """Whether the declared layout of the struct/array a load reads from says its
        bytes are integer fields (a struct copy split per field by SROA; a ``short``
        array field indexed by a variable)."""
        from ..analysis.types import indexed_kinds, layout_kinds
        dl = self.ctx.module.datalayout
        n = dl.store_size(load.type)
        return (layout_kinds(load.operand(0), n, dl) == {"int"}
                or indexed_kinds(load.operand(0), n, dl) == {"int"}) \
            and not any(carried_float(load, u) for u in load.users if isinstance(u, Store))

    def _callee_kinds(self, inst):
        act = self.act
        kinds = []
        callee = inst.called_function
        for k, a in enumerate(inst.args):
            if passes_shadow(a, act, callee, k):
                kinds.append("dup")
            elif floatish(a.type) and a in act.active:
                kinds.append("out")
            else:
                kinds.append("const")
        if callee is not None and callee.function_type.varargs:
            # what a variadic callee receives through ``...`` carries no derivative
            # there (its va_list has no shadow, or its va_start is refused): passed as
            # it is, after the callee's own arguments
            kinds = kinds[:len(callee.args)]
        return kinds

    def _aug_atomic(self, inst):
        p, v = inst.operands
        if p not in self.act.shadowed and v in self.act.active:
            raise unshadowed_atomic_error(self.ctx.err_loc(inst))

    def _aug_call(self, inst, A):
        gen = self.gen
        act = self.act
        name = inst.callee_name or ""
        if openmp.aug_call(self.gen, inst, A):
            return
        eff = call_effect(name)
        ekind = eff.kind if eff is not None else None
        if ekind == "free":
            self._mark_freed(inst, A)
        if ekind in ("nomem", "free", "typehint"):
            return
        if ekind == "mpi" and not mpi.user_rule(self.gen, inst):
            mpi.aug_call(self.gen, inst, A)
            return
        if ekind == "mirror":
            # a pointer-structure call (red-black tree): the same call on the shadows
            if any(a in act.shadowed for a in inst.args):
                c = A.clone({})
                c.metadata, c.name = [], None
                for k, a in enumerate(inst.args):
                    if a.type.is_pointer:
                        c.set_arg(k, gen._sh_aug(a, inst))
                c.insert_after(A)
                self.mirrored[inst] = c
            return
        if ekind == "alloc":
            if eff.out is not None and inst.args[eff.out] in act.shadowed:
                # posix_memalign: a shadow block, stored where the pointer goes
                self.e.position_before(A.parent.instructions[A.parent.index_of(A) + 1])
                S = self._shadow_block(A.args[eff.size[1]], A.args[eff.align])
                self.e.store(S, gen._sh_aug(inst.args[eff.out], inst), 8)
                gen.out_shadows[inst] = S
            return
        args = inst.args
        involved = act.involved(inst)
        if ekind == "sort":
            if args[0] in act.shadowed:
                aug_qsort(self.gen, inst, A)   # ad/sort.py
            return
        mem = _mem_intrinsic(name)
        if mem is not None:
            if mem != "memset":
                check_const_pointers_copied(inst, act, self.ctx.err_loc(inst))
            if args[0] in act.shadowed:
                self._had_int = False
                kind = self._mem_kind(inst)
                gen.mem_kind[inst] = kind
                if self._had_int:
                    # integers may be among the bytes: see libc.unless_own_shadow
                    gen.mem_maybe_int.add(inst)
                if kind == "ptr" and mem != "memset" and args[1] not in act.shadowed \
                        and self._moves_only_integers(inst):
                    # characters into an object that also holds pointers (a string
                    # literal into std::string's inline buffer inside a C++ object)
                    kind = gen.mem_kind[inst] = "int"
                if kind in ("ptr", "zero"):
                    if mem != "memset" and args[1] not in act.shadowed \
                            and self._const_param_copied(inst):
                        # a constant struct passed by value copied into a local whose
                        # pointer fields hold only pointers without a shadow (darknet's
                        # ``image`` handed on by value): the local's shadow is zero
                        e = self.e
                        e.position_before(A)
                        memset = e.declare("llvm.memset.p0.i64", T.void,
                                           [T.ptr, T.i8, T.i64, T.i1])
                        e.call(memset, [gen._sh_aug(args[0], inst), ConstantInt(T.i8, 0),
                                        A.args[2], ConstantInt(T.i1, 0)])
                        gen.mem_kind[inst] = "int"
                        return
                    own = mem != "memset" and args[1] not in act.shadowed
                    if own and not self._own_shadow_table(args[1], inst):
                        raise ADError(
                            "memcpy of pointers from memory without a shadow into memory "
                            "that has one", location=self.ctx.err_loc(inst),
                            hint="pass the source with enzyme_dup, or copy the data the "
                                 "pointers point to instead")
                    c = A.clone({})
                    c.set_operand(0, gen._sh_aug(args[0], inst))
                    if mem == "memset":
                        c.set_operand(1, ConstantInt(T.i8, 0))   # (what is written: no
                        #                                          derivative, no pointer)
                    elif not own:   # (else the table is its own shadow: see below)
                        c.set_operand(1, gen._sh_aug(args[1], inst))
                    c.insert_after(A)
                elif kind == "mixed":
                    self._aug_mixed_copy(inst, A)
            elif mem != "memset":
                hooks = self.ctx.hooks
                check_copy_into_unshadowed(
                    inst, act, self.ctx.err_loc(inst),
                    hooks.reg.inactive_globals if hooks is not None else (),
                    self.P in getattr(self.ctx, "entries", ())
                    and act.write_only_argument(args[0]))
            return
        if eff is not None and eff.writes:
            ws = shadowed_writes(inst, lambda v: v in act.shadowed, self.ctx.err_loc(inst))
            if ws:
                self.e.position_before(A.parent.instructions[A.parent.index_of(A) + 1])
                gen.write_sizes[inst] = [(k, written(self.e, k, size, A.args, A))
                                         for k, size in ws]
                for (k, size), (_, n) in zip(ws, gen.write_sizes[inst]):
                    if size[0] == "textptr":    # the shadow slot: the same pointer
                        fill_shadow(self.e, k, size, gen._sh_aug(args[k], inst),
                                    A.args[k], n)
            if inst not in act.active:
                return
        if not involved:
            self.ctx.call_original(A)
            return
        if self.ctx.hooks is not None and self.ctx.hooks.aug_call(self.gen, inst, A):
            return
        if returns_text(name):
            # a std::string member, also one defined here (libc++ instantiates them in
            # the program): characters only, as in forward mode
            self.e.position_before(A.parent.instructions[A.parent.index_of(A) + 1])
            sync_text_objects(self.e, inst, A, lambda a: [gen._sh_aug(a, inst)]
                              if a in act.shadowed else [])
            return
        if ekind == "inactive":
            return      # (a C++ stream's member defined here, as in forward mode)
        callee = inst.called_function
        pairs = None
        if callee is None and is_indirect(inst):
            # through a function pointer or a vtable: every candidate (ad/dispatch.py)
            pairs = resolve(self.ctx, inst, self.ctx.err_loc(inst))
            callee = pairs[0][1]
        if callee is not None and not callee.is_declaration:
            kinds = self._callee_kinds(inst)
            ret_active = floatish(inst.type) and inst in act.active
            if gen.parallel:
                # other threads may write what the arguments point to meanwhile: the
                # caller's overwrite facts do not carry into the callee
                facts = (False, frozenset())
            else:
                facts = (self.ow.callee_stable.get(inst, False),
                         self.ow.callee_noalias.get(inst, frozenset()))
            fields = act.callee_const_fields(inst.args)
            own = act.callee_own_args(inst.args)
            g = self.ctx.get(callee, kinds, ret_active, *facts, parallel=gen.parallel,
                             const_fields=fields, own_args=own)
            if pairs is not None:
                self.e.position_before(A)
                g = Dispatched(self.gen, inst, pairs,
                               [self.ctx.get(c, kinds, ret_active, *facts,
                                             parallel=gen.parallel, const_fields=fields,
                                             own_args=own)
                                for _, c in pairs])
            new_args = [a for a, _ in zip(A.args, kinds)]
            call_args = []
            for orig, a, k in zip(args, new_args, kinds):
                call_args.append(a)
                if k == "dup":
                    call_args.append(gen._sh_aug(orig, inst))
            call_args.append(gen.tape_aug)
            if g.aug.function_type.varargs:
                call_args.extend(A.args[len(kinds):])   # what ``...`` received
            c = Call(g.aug.function_type, g.aug if pairs is None else g.aug_callee, call_args)
            c.insert_before(A)
            if g.ret_shadow:
                pv = ExtractValue(c, [0])
                pv.insert_after(c)
                sv = ExtractValue(c, [1])
                sv.insert_after(pv)
                self.ret_shadows[inst] = sv
                A.replace_all_uses_with(pv)
                c = pv
            else:
                A.replace_all_uses_with(c)
            A.erase()
            gen.vmap[inst] = c
            gen.replaced_calls[inst] = g
            return
        if libm_rule(name) is not None or reduction_rule(name) is not None \
                or struct_math_rule(name) is not None:
            return
        if ekind in ("inactive", "writes"):
            return
        if callee is None:
            raise indirect_call_error(inst, self.ctx.err_loc(inst))
        raise external_call_error(name, self.ctx.err_loc(inst), forward=False)

    def _mem_kind(self, inst):
        """What the memory moved by memcpy/memset holds: 'double', 'float', 'ptr', 'int'
        (characters -- a ``std::string``'s, string literals: 'int');
        'zero' for a memset of zeros over anything else (the shadow is zeroed in both
        sweeps).  From the copy's own TBAA tag where LLVM made it from typed accesses;
        else from the objects' kinds; where those give no answer, from the kinds of
        exactly the bytes moved (``types.byte_kinds``)."""
        from ..analysis.types import FLOAT_KINDS, byte_kinds, constant_text, copied_floats, \
            memory_kinds, pointee_kinds, string_buffer, string_characters, \
            string_object_bytes, tbaa_kind
        n = inst.args[2]
        if len(inst.args) > 3 and (string_characters(inst.args[1])
                                   or constant_text(inst.args[1])
                                   # (into a string's characters: one built from a
                                   # `const char *` read from an array of names)
                                   or string_characters(inst.args[0])):
            return "int"    # characters copied (a std::string built or copied)
        dl = self.ctx.module.datalayout
        if len(inst.args) > 3 and isinstance(n, ConstantInt) and any(
                string_object_bytes(p, dl, n.value) for p in inst.args[:2]):
            return "int"    # a std::string's representation moved (libc++: into a node)
        if len(inst.args) > 3 and not isinstance(n, ConstantInt) and any(
                string_buffer(p, dl) for p in inst.args[:2]):
            return "int"    # a string's characters (moved into new storage, or built)
        ptrs = [inst.args[0]] + ([inst.args[1]] if len(inst.args) > 3 else [])
        size = n.value if isinstance(n, ConstantInt) else None
        kinds = memory_kinds(ptrs, size=size)
        # a copy LLVM made from typed accesses of one type (a delay line's shift loop,
        # ``z[i] = z[i - 1]``, as a memmove inside a struct that also holds pointers)
        # keeps their TBAA tag: the bytes moved are of that type, where the objects
        # hold such values (an integer tag is not taken: a word copy of doubles)
        tagged = tbaa_kind(inst) if len(inst.args) > 3 else None
        if tagged in ("double", "float", "ptr") and tagged in kinds:
            return tagged
        if kinds and not kinds & FLOAT_KINDS:
            # the objects' typed accesses may all be elsewhere than the bytes moved (an
            # int header written beside doubles that a caller reads through a pointer
            # kept in memory; a {key, value} entry whose key alone is read where a
            # callee copies it, at -O0): the byte-offset analysis, which follows those,
            # looks at exactly these bytes
            moved = pointee_kinds(inst.module, ptrs, size)
            if moved & FLOAT_KINDS:
                kinds = moved | kinds
            else:
                # (or where integer copies take the bytes on and they are read as floats
                # there: doubles put into a byte buffer, copied out by a helper as
                # 8-byte integers into doubles -- the adjoint was dropped here)
                kinds = kinds | copied_floats(inst.module, ptrs, size)
        elif kinds & FLOAT_KINDS and "ptr" not in kinds \
                and _mem_intrinsic(inst.callee_name or "") in ("memcpy", "memmove") \
                and "ptr" in pointee_kinds(inst.module, ptrs, size):
            # the objects' accesses, seen from one load of the pointer to them, can miss
            # the pointers stored through another load of it (records of a list reached
            # through ``r->c``, loaded afresh at -O0 for the copy and for the store of a
            # pointer field): the byte-offset analysis follows those -- the pointers'
            # shadows must move with the bytes
            kinds = kinds | {"ptr"}
        try:
            return self._mem_kind_of(inst, kinds)
        except ADError:
            refined = byte_kinds(ptrs, size, kinds)
            if refined == kinds:
                raise
            return self._mem_kind_of(inst, refined)

    def _kinds_moved(self, inst) -> set:
        """What the byte-offset analysis finds in exactly the bytes a memcpy moves, at
        both ends ({"ptr"} when it cannot tell)."""
        from ..analysis.types import pointee_kinds
        n = inst.args[2]
        if not isinstance(n, ConstantInt):
            return {"ptr"}
        return pointee_kinds(inst.module, inst.args[:2], n.value) or {"ptr"}

    def _moves_only_integers(self, inst) -> bool:
        """Whether the byte-offset analysis finds only integers in exactly the bytes a
        memcpy moves, at both ends (the objects' kinds, which say 'ptr' for an object
        holding pointers and integers, do not look at offsets), or the declared layout
        of either end has only integer fields there (llama2.c's ``t.config = *cfg``: a
        struct of ints copied into a struct that also holds pointers, whose bytes the
        byte-offset analysis merges with the pointers next to them at -O0)."""
        from ..analysis.types import layout_kinds
        n = inst.args[2]
        if isinstance(n, ConstantInt) and any(
                layout_kinds(p, n.value, self.ctx.module.datalayout) == {"int"}
                for p in inst.args[:2]):
            return True
        return self._kinds_moved(inst) == {"int"}

    def _mem_kind_of(self, inst, kinds):
        # Zeroing memory (C++ value-initialisation, a hash table's new buckets): whatever
        # it holds, its shadow is zeroed too -- null shadow pointers, and adjoints of the
        # floats dropped (the reverse of a store of constants drops them as well, so doing
        # it already in the forward sweep changes nothing)
        gen = self.gen
        zeroing = _mem_intrinsic(inst.callee_name or "") == "memset" \
            and isinstance(inst.args[1], ConstantInt) and inst.args[1].value == 0
        if not kinds and zeroing:
            return "zero"
        if not kinds:
            name = _mem_intrinsic(inst.callee_name or "")
            raise ADError(f"{name} into memory that carries derivatives, but type analysis "
                          "cannot tell what the memory holds (no typed access to it is "
                          "visible)", location=self.ctx.err_loc(inst),
                          hint="say what it holds before the copy: __enzyme_double(ptr, "
                               "bytes) (or __enzyme_float/__enzyme_integer/__enzyme_pointer; "
                               "see enzyme.h)")
        if kinds == {"int"}:
            return "int"
        self._had_int = "int" in kinds
        kinds.discard("int")
        if kinds in ({"double"}, {"float"}, {"ptr"}):
            return next(iter(kinds))
        mem = _mem_intrinsic(inst.callee_name or "")
        if kinds == {"double", "float"}:
            if mem == "memset":
                return "double"   # the shadow's bytes are zeroed whatever they hold
            fields = self._float_fields(inst) if mem == "memcpy" or mem == "memmove" \
                and not isinstance(inst.args[2], ConstantInt) else None
            if fields is not None and mem == "memmove" and inst not in gen.mem_strides:
                fields = None   # (a struct's runs moved within itself: not followed)
            if fields is None:
                raise ADError(f"{mem} over memory that mixes double and float values, and "
                              "the layout of the bytes it moves is not visible (not a "
                              "copy of whole fields of one struct or array type)",
                              location=self.ctx.err_loc(inst),
                              hint="copy the fields one by one, or assign the struct")
            gen.mem_fields[inst] = fields
            return "fields"
        if len(kinds) == 1:
            raise ADError(f"memcpy/memset of {next(iter(kinds))} values is not supported",
                          location=self.ctx.err_loc(inst), hint="copy the values one by one")
        if mem == "memset":
            # fields of several types (a C++ object) zeroed, or bytes of text written
            # over an object the analysis cannot tell apart (std::string(n, 'k')'s
            # characters in a pair beside a double): whatever the bytes were, what is
            # written carries no derivative -- the shadow's bytes are zeroed
            return "zero"
        if "ptr" in kinds and mem == "memcpy":
            # a struct with pointer and floating-point fields (``Holder h = {0, 2.0}``
            # copies a constant initialiser): the pointers' shadows are copied in the
            # forward sweep, the floats' adjoints move back in the reverse, by layout
            fields = self._float_fields(inst, pointers=True)
            if fields is not None:
                gen.mem_fields[inst] = fields
                return "mixed"
        if "ptr" in kinds and mem == "memmove":
            # records of pointers and floats shifted along one array (a history
            # `s[i] = s[i - 1]`, one memmove at -O1): record by record, in the order
            # the overlap needs
            fields = self._shifted_records(inst)
            if fields is None and not self._same_object(inst):
                # records moved into other storage (std::vector's relocation into the
                # block it grew into): by the records' layout, element by element
                fields = self._float_fields(inst, pointers=True)
            if fields is not None:
                gen.mem_fields[inst] = fields
                return "mixed"
        if "ptr" not in kinds:
            names = {"double": "double", "float": "float", "float-other": "long double "
                     "(or half)"}
            what = " and ".join(sorted(names.get(k, k) for k in kinds))
            raise ADError(f"{mem} over memory that mixes {what} values is not supported "
                          "yet", location=self.ctx.err_loc(inst),
                          hint="copy the fields one by one (a struct holding a long double "
                               "passed or returned by value is copied this way: pass it "
                               "by pointer)")
        raise ADError("memcpy/memset over memory that mixes floating-point values and "
                      "pointers is not supported yet", location=self.ctx.err_loc(inst),
                      hint="copy the fields one by one")

    def _float_fields(self, inst, pointers=False):
        """A struct copy (memcpy of a constant size) by the declared layout of either
        side (else the byte-offset analysis's): the (offset, 'double'/'float', bytes)
        runs of its floating-point fields (``pointers``: pointer fields may be among the
        other bytes)."""
        from ..analysis.types import float_fields, tbaa_struct_fields, tree_float_fields
        n = inst.args[2]
        if isinstance(n, ConstantInt):
            size = n.value
        else:
            # ``memcpy(dst, src, count * sizeof *src)``: the fields of one element,
            # repeated every ``size`` bytes (``gen.mem_strides``)
            size = _element_size(n)
            if size is None:
                from ..analysis.typetree import MemoryTypes
                size = MemoryTypes.of(self.ctx.module, [n]).distance_period(n)
            if size is None:
                return None
        dl = self.ctx.module.datalayout
        got = None
        for p in inst.args[:2]:
            got = float_fields(p, size, dl, pointers=pointers)
            if got is not None:
                break
        if got is None and isinstance(n, ConstantInt):     # (it lists the whole copy)
            got = tbaa_struct_fields(inst, size, pointers=pointers)
        if got is None:
            # no declared layout (pointers loaded from memory at -O0): the byte-offset one
            got = tree_float_fields(self.ctx.module, inst.args[:2], size, pointers=pointers)
        if got is not None and not isinstance(n, ConstantInt):
            self.gen.mem_strides[inst] = size
        return got

    def _same_object(self, inst) -> bool:
        """Whether a memmove moves bytes within one object as far as the IR shows (its
        ends derive from the same pointer).  Ends from different pointers -- a block
        allocated here and the old storage, two pointers a helper got -- that overlap
        all the same point into one array of the records: whole records apart, which
        the move helpers take in memmove's order."""
        from ..analysis.activity import underlying_object
        a, b = (underlying_object(p) for p in inst.args[:2])
        return a is b

    def _shifted_records(self, inst):
        """For a memmove within one array by a distance ``d`` (records of pointers and
        floats shifted along it): of a constant size, where the float runs of the bytes
        moved repeat every ``d`` bytes, the float runs of one ``d``-byte record (the
        copy is then ``size / d`` records, ``gen.mem_strides``); of ``count * sizeof
        *p`` bytes (an insertion into a sorted array), those of one element, where
        ``d`` is a whole number of elements; else None."""
        from ..analysis.activity import base_offset
        n = inst.args[2]
        dl = self.ctx.module.datalayout
        (a, oa), (b, ob) = (base_offset(p, dl, to_variable=True) for p in inst.args[:2])
        if a is None or a is not b or oa == ob:
            return None
        d = abs(oa - ob)
        if not isinstance(n, ConstantInt):
            runs = self._float_fields(inst, pointers=True)
            stride = self.gen.mem_strides.get(inst)
            return runs if runs is not None and stride and d % stride == 0 else None
        size = n.value
        runs = self._float_fields(inst, pointers=True)
        if runs is None or size % d:
            return None
        # (by single values: runs of adjacent records may have been merged)
        got = {(off + j, k) for off, k, m in runs
               for w in [8 if k == "double" else 4] for j in range(0, m, w)}
        if any(off + d < size and (off + d, k) not in got for off, k in got):
            return None
        one = []
        for off, k in sorted(x for x in got if x[0] < d):
            w = 8 if k == "double" else 4
            if off + w > d:
                return None
            if one and one[-1][1] == k and one[-1][0] + one[-1][2] == off:
                one[-1] = (one[-1][0], k, one[-1][2] + w)
            else:
                one.append((off, k, w))
        self.gen.mem_strides[inst] = d
        return one

    def _aug_mixed_copy(self, inst, A):
        """The forward sweep of a struct copy mixing pointer and floating-point fields:
        the bytes between the float runs (pointers, integers) of the destination's
        shadow get the source's shadow bytes -- or, from constant data without a
        shadow (an initialiser), the constant's own bytes, where each pointer in it is
        its own shadow (null, a function, read-only data)."""
        from ..analysis.activity import constant_leaves
        gen = self.gen
        args, e = inst.args, self.e
        src = args[1]
        stride = gen.mem_strides.get(inst)
        if stride is not None and src not in self.act.shadowed:
            raise ADError("memcpy of an array of structs with pointer fields from memory "
                          "without a shadow into memory that has one",
                          location=self.ctx.err_loc(inst),
                          hint="pass the source with enzyme_dup, or copy the structs one "
                               "by one")
        consts = _constant_pointers(src)
        twins = []      # (offset, shadow) of pointers into read-only float tables
        leaves = constant_leaves(inst, self.ctx.module.datalayout) if consts else None
        if src in self.act.shadowed:
            from_ = gen._sh_aug(src, inst)
        elif consts is not None and self._own_shadow_table(src, inst):
            from_ = A.args[1]
        elif leaves is not None:
            # a whole constant (``cond_t c = {300.0, NU}``) holding pointers into
            # read-only float tables: their shadows are the tables' zero twins
            from_ = A.args[1]
            twins = [(o, sh) for o, c in leaves if c.type.is_pointer
                     for sh in [gen._sh_aug(c, inst)] if sh is not c]
        elif "ptr" not in self._kinds_moved(inst):
            # only integers beside the floats in the bytes moved (a plain config struct
            # copied into an object that also holds a vector): no pointer's shadow to
            # move; the floats' adjoints are dropped in the reverse (constant data)
            return
        else:
            raise ADError("memcpy of a struct with pointer fields from memory without a "
                          "shadow into memory that has one", location=self.ctx.err_loc(inst),
                          hint="pass the source with enzyme_dup, or set the fields one by one")
        to = gen._sh_aug(args[0], inst)
        e.position_before(A.parent.instructions[A.parent.index_of(A) + 1])
        if stride is not None:      # the same gaps in each of n structs
            from .runtime import runtime_function
            move = _mem_intrinsic(inst.callee_name or "") == "memmove"
            each = runtime_function(self.ctx.module, "__enzyme_py_strided_move_copy"
                                    if move else "__enzyme_py_strided_copy")
            n = A.args[2] if A.args[2].type == T.i64 else e.cast("zext", A.args[2], T.i64)
            for at, gap in _gaps(gen.mem_fields[inst], stride):
                e.call(each, [to, from_, n] + [ConstantInt(T.i64, v)
                                               for v in (stride, at, gap)])
            return
        memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
        for at, gap in _gaps(gen.mem_fields[inst], args[2].value):
            e.call(memcpy, [e.gep_bytes(to, at), e.gep_bytes(from_, at),
                            ConstantInt(T.i64, gap), ConstantInt(T.i1, 0)])
        for off, sh in twins:
            e.store(sh, e.gep_bytes(to, off) if off else to, 8)


def _gaps(runs, size):
    """(offset, bytes) of what lies between the float ``runs`` in ``size`` bytes."""
    at, out = 0, []
    for off, _k, n in runs + [(size, None, 0)]:
        if off > at:
            out.append((at, off - at))
        at = off + n
    return out


def _element_size(n, depth=4):
    """S where the byte count ``n`` is ``count * S`` for a constant S (``mul``, ``shl``
    by a constant, through ``zext``/``sext``): the size of the elements of the array
    copied.  ``(n - 1) * S`` folds to ``n * S - S``, ``(n & ~1) * S`` to a mask of
    ``n * S``: a constant multiple of S added or subtracted, or a mask keeping a
    power-of-two S's multiples, keep S, and so does the sum or difference of two
    multiples of S; a difference the code divides exactly by S is a multiple of it
    (``typetree.exact_multiple``)."""
    while isinstance(n, Cast) and n.opcode in ("zext", "sext"):
        n = n.operand(0)
    if not isinstance(n, BinaryOp) or not depth:
        return None
    a, b = n.operand(0), n.operand(1)
    if n.opcode == "mul":
        c = b if isinstance(b, ConstantInt) else a if isinstance(a, ConstantInt) else None
        return c.value if c is not None and 0 < c.value <= 4096 else None
    if n.opcode == "shl" and isinstance(b, ConstantInt) and 0 <= b.value <= 12:
        return 1 << b.value
    if n.opcode in ("add", "sub") and isinstance(b, ConstantInt):
        s = _element_size(a, depth - 1)
        return s if s is not None and b.value % s == 0 else None
    if n.opcode in ("add", "sub"):
        # ``(n - k) * S`` folded to ``n * S - k * S`` (a second erase at -O2)
        s = _element_size(a, depth - 1)
        if s is not None and s == _element_size(b, depth - 1):
            return s
    if n.opcode == "and" and isinstance(b, ConstantInt):
        s = _element_size(a, depth - 1)
        return s if s is not None and s & (s - 1) == 0 and b.value % s == 0 else None
    if n.opcode == "sub":
        # ``end - begin`` in bytes, which the code also divides exactly by S to count
        # the elements (``std::vector``'s relocation at -O2)
        from ..analysis.typetree import exact_multiple
        s = exact_multiple(n)
        return s if s is not None and s <= 4096 else None
    return None


def _constant_pointers(p):
    """The non-null pointers in the initialiser of the constant global ``p`` points
    into (a constant struct initialiser clang copies with memcpy), or None when ``p``
    does not point into a constant global -- one declared ``const``, or one nothing in
    the program writes (``_never_written``: a ``static`` table of records at -O0, before
    LLVM's global optimisation marks it constant)."""
    from ..analysis.globals import global_base
    from ..ir.values import ConstantAggregate
    g = global_base(p)
    if g is None or g.initializer is None or not (g.is_constant or _never_written(g)):
        return None
    out, work = [], [g.initializer]
    while work:
        c = work.pop()
        if isinstance(c, ConstantAggregate):
            work.extend(c.operands)
        elif c.type.is_pointer and not isinstance(c, (ConstantNull, Undef, Poison)):
            out.append(c)
    return out
