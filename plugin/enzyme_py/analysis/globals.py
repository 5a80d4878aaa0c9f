"""Globals that get a shadow global: scratch memory for active intermediates.

A program may keep intermediate values of the computation in a writable global (a
``static double scratch[N]`` work array, an arena a custom allocator hands out).  Enzyme
gives such globals a shadow; so do we.  A global gets one when the differentiated
functions (the closure of a round) store a floating-point value into it -- a ``store``,
an ``atomicrmw`` or a memcpy/memmove into it, directly or through a pointer a defined
function returns (an arena allocator) -- it is defined in the module, writable,
holds no pointers, and is not marked inactive (``__enzyme_inactive_global``).  Its
shadow is a zero-initialised internal global of the same type; loads from the global
are then active, stores accumulate and clear adjoints as for any shadowed memory.

A pointer variable (``static double **d`` of Numerical Recipes' Bulirsch-Stoer) gets
one too when the differentiated functions store into it a block they allocate
(``malloc``, or a function returning one: NR's ``matrix()``): its shadow holds the
block's shadow.  Read before that store in a derivative call, it holds whatever the
caller left there, which has no shadow: the derivative code stops with a message
(``runtime.unset_shadow_check``).

So does a pointer variable (or a pointer field of a global struct or array: a mixer's
``static Chan chans[N]`` with a ``.buf`` each) into which the differentiated code stores
pointers the call sites pass with ``enzyme_dup`` -- directly or through the parameters
of the functions it calls (``register(0, a)`` storing ``chans[i].buf = b``): its shadow
holds the caller's shadow, so a function that reads the pointer back later
(``gp[0] * gp[1]`` in a callee LLVM does not inline) reads and accumulates derivatives
there.  The address of a local variable of the differentiated code (an observer
registered in ``static struct acc *g_obs[N]``; a quadrature driver's ``void *params``)
counts too: its shadow lives until the reverse sweep of its function is done; so does a
value read from the global itself and stored back (``saved = g_params; ...; g_params =
saved``: its shadow is the one the shadow global held).  Where some pointer stored
into such a global may have no shadow (an ``enzyme_const`` argument, a pointer loaded
from elsewhere), the global gets none, and a pointer with a shadow stored into it is a
compile error where the differentiated code reads the global back
(``pointer_read_back``): its derivatives would be lost.

A global that the differentiated code only reads (parameters set by the caller, tables)
gets none: it is constant data for the derivative, as before.

The shadow holds what the global's derivative holds during one derivative call; the
call sites zero it before each reverse, forward and augmented-forward call (see
``ad/__init__.py``), so a value that was in the global before the call has derivative
zero, and adjoints never leak from one call into the next.  Like the global itself, the
shadow is shared by all threads -- and a thread-local global's (``_Thread_local``, reached
through ``llvm.threadlocal.address``) is thread-local: each thread's copy has its own
shadow, which the call sites zero for the calling thread; one used inside an OpenMP
parallel region is refused (``thread_local_in_parallel``).
"""

from __future__ import annotations

from ..ir.instructions import Alloca, AtomicRMW, Call, Load, Ret, Store
from ..ir.module import Function, GlobalVariable
from ..ir.values import ConstantExpr, ConstantNull
from .activity import floatish, has_pointer, underlying_object
from .effects import FREE_NAMES, text_only
from .callgraph import indirect_targets, is_indirect
from .types import _roots

__all__ = ["global_base", "heap_block_only", "kept_in_globals", "may_access_floats",
           "pointer_read_back", "scratch_globals", "shadow_constant", "shadow_linkage",
           "thread_local", "thread_local_in_parallel", "touches"]

_MEMCOPY = ("llvm.memcpy.", "llvm.memmove.", "llvm.memcpy.inline.")


def global_base(v, calls=0):
    """The global variable a pointer (instruction GEPs/casts, constant expressions)
    points into, else None.  With ``calls`` > 0, also through that many levels of calls
    to defined functions that return pointers into one global (an arena allocator)."""
    v = underlying_object(v)
    for _ in range(16):
        if isinstance(v, GlobalVariable):
            return v
        if calls and isinstance(v, Call) and v.called_function is not None \
                and not v.called_function.is_declaration:
            got = {global_base(t.value, calls - 1) for b in v.called_function.blocks
                   for t in [b.terminator] if isinstance(t, Ret) and t.value is not None}
            return got.pop() if len(got) == 1 else None
        if isinstance(v, ConstantExpr) and v.opcode in ("getelementptr", "bitcast",
                                                        "addrspacecast") and v.operands:
            v = v.operand(0)
            continue
        return None
    return None


def _eligible(g, inactive, pointers=False) -> bool:
    return (isinstance(g, GlobalVariable) and not g.is_constant and not g.is_declaration
            and (pointers or not has_pointer(g.value_type)) and g.name not in inactive)


def scratch_globals(functions, inactive=(), entry_kinds=None) -> list:
    """The globals the ``functions`` store floating-point values into (in first-seen
    order), which get shadow globals -- by name, or through a pointer parameter of one
    of the functions that some call among them passes the global for (``static double
    w[4]; fill(w, x);`` with ``fill`` not inlined) -- and the pointer variables they
    store blocks they allocate, or ``enzyme_dup`` pointers, into.  ``entry_kinds``:
    parameter of a function the call sites differentiate -> the set of its bindings'
    kinds ("dup", "const", ...) over those call sites."""
    passed = _globals_passed(functions)
    fns = set(functions)
    origins = _pointer_origins(functions, entry_kinds or {})
    given = _roots_passed(functions)
    stored: dict = {}   # pointer global -> whether every pointer stored there has a shadow
    out: dict = {}
    for fn in functions:
        for inst in fn.instructions():
            gs = ()
            if isinstance(inst, Store) and floatish(inst.operand(0).type):
                gs = _bases(inst.operand(1), passed, tls=True)
            elif isinstance(inst, AtomicRMW) and floatish(inst.operand(1).type):
                gs = _bases(inst.operand(0), passed, tls=True)
            elif isinstance(inst, Call) and (inst.callee_name or "").startswith(_MEMCOPY):
                gs = [d for d in _bases(inst.args[0], passed, tls=True)
                      if floatish(d.value_type)]
            elif isinstance(inst, Store) and inst.operand(0).type.is_pointer:
                v = inst.operand(0)
                # by name, or through a pointer to it a caller passes (a setter on a
                # global object: `bind(&g_ctx, x)` storing `c->p = x`; a thread-local
                # one too)
                for g in _bases(inst.operand(1), passed, tls=True):
                    if not _eligible(g, inactive, pointers=True):
                        continue
                    if _fresh(v) and g.value_type.is_pointer:
                        # a pointer variable holding a block the code allocates
                        # (Numerical Recipes' file-scope `double **d` scratch): its
                        # shadow global holds the block's shadow -- unless the block
                        # only ever holds integers (a lazily allocated `int *g_idx`
                        # workspace, which a primal call may have allocated before)
                        if not _integers_only(v, g, functions):
                            out[g] = True
                            heap_block_only(g)      # (asked now: see there)
                    elif not isinstance(v, ConstantNull):
                        # (a parameter every call among the functions passes a global
                        # for -- a setter `ws_init(&w, buf)` storing `e->x = v` -- stores
                        # that global's address)
                        roots = [x for r in _roots(v) for x in given.get(r, [r])]
                        # a writable global's own address (an embedded filter's
                        # `g_fir.delay = g_delay` work array) takes a shadow global too
                        scratch = [global_base(r) for r in roots]
                        ok = all(_fresh(r) or _local(r, fns)
                                 # (a value read from this global, stored back: a
                                 # re-entrant driver restoring what it saved)
                                 or isinstance(r, Load)
                                 and g in _bases(r.operand(0), passed, tls=True)
                                 or (getattr(r, "is_argument", False)
                                     and (origins.get(r) or {"other"})
                                     <= {"dup", "local"})
                                 or (b is not None and _eligible(b, inactive))
                                 for r, b in zip(roots, scratch))
                        ok_so_far, held = stored.get(g, (True, []))
                        stored[g] = (ok_so_far and ok,
                                     held + [b for b in scratch if b is not None])
                continue
            for g in gs:
                if _eligible(g, inactive):
                    out[g] = True
    for g, (ok, held) in stored.items():
        if ok:
            out[g] = True
            for b in held:
                out[b] = True
    return list(out)


def thread_local(g) -> bool:
    """Whether the global variable ``g`` is thread-local (``_Thread_local``,
    ``thread_local``, ``#pragma omp threadprivate``)."""
    return "thread_local" in (g.prefix or "")


def shadow_linkage(g) -> str:
    """The linkage of ``g``'s shadow global: internal, and thread-local where ``g`` is
    (each thread's copy of the global has its own shadow, reached through the same
    ``llvm.threadlocal.address``: a per-thread accumulator stays per thread)."""
    return "internal thread_local" if thread_local(g) else "internal"


def thread_local_in_parallel(g, functions):
    """An instruction of an OpenMP parallel region among ``functions`` (an outlined body
    ``__kmpc_fork_call`` runs, or a function it calls) that uses the thread-local
    global ``g``, else None.  The call sites zero a shadow global before each derivative
    call on the calling thread only: the copies of the region's other threads would
    keep the adjoints an earlier call left there."""
    if not thread_local(g):
        return None
    fns = set(functions)
    work = [a for fn in functions for i in fn.instructions()
            if isinstance(i, Call) and (i.callee_name or "") == "__kmpc_fork_call"
            for a in i.args[2:3] if isinstance(a, Function) and a in fns]
    seen = set()
    while work:
        fn = work.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for i in fn.instructions():
            if any(o is g for o in i.operands):
                return i
            c = i.called_function if isinstance(i, Call) else None
            if c is not None and c in fns:
                work.append(c)
    return None


def _roots_passed(functions) -> dict:
    """Parameter -> the roots of the pointers the direct calls among ``functions`` pass
    for it, where those are all globals and no call from elsewhere reaches it."""
    fns = set(functions)
    out: dict = {}
    for arg, r in _passed_roots(functions):
        out.setdefault(arg, []).append(r)
    return {a: rs for a, rs in out.items()
            if all(global_base(r) is not None for r in rs)
            and not any(isinstance(u.user, Call) and u.user.called_function is a.parent
                        and u.user.parent is not None and u.user.parent.parent not in fns
                        for u in a.parent.uses)}


def _pointer_origins(functions, entry_kinds) -> dict:
    """Parameter of ``functions`` -> what the pointers passed for it come from: the
    kinds of the call sites' bindings ("dup", "const") where it is a differentiated
    function's own parameter, and "other" for any pointer passed by a call among
    ``functions`` that is not one of their parameters nor a block they allocate, or
    by a call from outside them; "local" for a local variable of one of them."""
    fns = set(functions)
    edges = []
    origins: dict = {}
    for fn in functions:
        for arg in fn.args:
            if arg.type.is_pointer:
                origins[arg] = set(entry_kinds.get(arg, ()))
        for u in fn.uses:
            c = u.user
            if isinstance(c, Call) and c.called_function is fn \
                    and c.parent is not None and c.parent.parent not in fns:
                for arg in fn.args:
                    origins.get(arg, set()).add("other")
    for arg, r in _passed_roots(functions):
        if getattr(r, "is_argument", False):
            edges.append((arg, r))
        elif _local(r, fns):
            origins.setdefault(arg, set()).add("local")
        elif not _fresh(r):
            origins.setdefault(arg, set()).add("other")
    changed = True
    while changed:
        changed = False
        for param, src in edges:
            have = origins.setdefault(param, set())
            new = origins.get(src, {"other"})
            if not new <= have:
                have |= new
                changed = True
    return origins


def kept_in_globals(ptr, functions, memo: dict) -> list:
    """The writable globals the address ``ptr`` may point into: by name, through a
    parameter some call among ``functions`` passes a global for, through a function
    returning a pointer into one (a singleton's accessor), or a thread-local one
    (``llvm.threadlocal.address``)."""
    passed = memo.get("passed")
    if passed is None:
        passed = memo["passed"] = _globals_passed(functions)
    return [g for g in _bases(ptr, passed, tls=True)
            if not g.is_constant and not g.is_declaration]


_TLS_ADDRESS = "llvm.threadlocal.address"


def pointer_read_back(g, functions, memo: dict) -> bool:
    """Whether any of ``functions`` loads a pointer from the global ``g`` through which
    derivatives may be read or accumulated (not when only integers and text are read
    through it: a parser's state with a position and a table of names)."""
    reads = memo.get("reads")
    if reads is None:
        reads = memo["reads"] = set()
        for fn in functions:
            for i in fn.instructions():
                if isinstance(i, Load) and i.type.is_pointer:
                    found = kept_in_globals(i.operand(0), functions, memo)
                    if found and may_access_floats(i):
                        reads.update(found)
    return g in reads


def argument_read_back(p, functions, memo: dict, store=None) -> bool:
    """Whether ``functions`` load a pointer -- through which they may access floats --
    back from the place ``p`` points to when that is in a caller's memory: an
    ``enzyme_const`` context struct (``c->theta``), or memory a pointer in it points to
    (``p->w->x``: a workspace the context holds), reached from the same argument -- or
    through the parameters of the callees it is passed to -- by the same offsets (or
    offsets not known).  A pointer with a shadow stored there and read back would lose
    its shadow on the way.  ``memo["same_object"]``: pairs of parameters a call site
    binds to the same object (the context passed twice), which count as one.

    A pointer the code loads from a writable global (``g_params->theta``, where
    ``g_params`` may point at the context, or at any memory the caller set up) may point
    at the same place too, on either side: such a pair counts where it takes the same
    offsets and names the same field as the ``store`` (its TBAA struct path, or the
    struct its ``getelementptr`` indexes) -- or where either does not say -- unless the
    global has a shadow (``memo["shadow_globals"]``: what it holds has shadows too) or
    is marked inactive (``memo["inactive_globals"]``), or the argument is one every
    call site binds to a local whose address goes nowhere else (``memo["private"]``).
    A global read by name is the argument's object where a call site binds the argument
    to it (``same_object``)."""
    aliases = memo.get("argument_paths")
    if aliases is None:
        aliases = memo["argument_paths"] = _parameter_paths(functions)
    shadowed = memo.get("shadow_globals", ())
    private = memo.get("private", ())
    inactive = memo.get("inactive_globals", ())     # (their derivatives dropped on purpose)

    def paths(x):       # (a global with a shadow holds pointers with shadows)
        return [t for t in _paths(x, aliases) if not _exempt(t[0], shadowed, inactive)]
    mine = paths(p)
    if not mine:
        return False
    same = memo.get("same_object", ())
    for fn in functions:
        for i in fn.instructions():
            if not (isinstance(i, Load) and i.type.is_pointer):
                continue
            for a, b in ((a, b) for a in mine for b in paths(i.operand(0))):
                if a[0] is b[0] and isinstance(a[0], GlobalVariable) \
                        or not _same_place(a, b, same, private):
                    continue    # (a global written and read by name: pointer_read_back)
                held = isinstance(a[0], _Held) or isinstance(b[0], _Held)
                if (not held or store is not None and _same_field(store, i)) \
                        and may_access_floats(i):
                    return True
    return False


def _exempt(root, shadowed, inactive) -> bool:
    """Whether a path's root is (or is held in) a global with a shadow or marked
    inactive."""
    g = root.global_ if isinstance(root, _Held) else root
    return isinstance(g, GlobalVariable) and (g in shadowed or g.name in inactive)


class _Held:
    """The root of a path through a pointer loaded from the writable global
    ``global_``: whatever object the caller left it pointing at."""
    __slots__ = ("global_",)

    def __init__(self, g):
        self.global_ = g


def _paths(p, aliases, depth=4) -> list:
    """The places in callers' memory the pointer ``p`` may point to, as ``(root,
    offsets)``: ``p`` is the root's address plus ``offsets[0]`` -- or, with more
    offsets, the pointer loaded from there plus the next one, and so on (None: an
    offset not known).  A root is an argument (a parameter stands for the paths of what
    its callers pass: ``aliases``), a writable global read by name, or ``_Held``: the
    object a pointer loaded from a writable global points to, which ``_same_place``
    takes for any argument's object."""
    from .activity import base_offset
    if isinstance(p, (GlobalVariable, ConstantExpr)):
        return _global_path(p)
    if not getattr(p, "is_instruction", False) and not getattr(p, "is_argument", False):
        return []
    fn = p.parent.parent if p.is_instruction else p.parent
    root, off = base_offset(p, fn.parent.datalayout)
    if getattr(root, "is_argument", False):
        out = [(root, (off,))]
        for a, offs in aliases.get(root, ()):
            last = None if off is None or offs[-1] is None else offs[-1] + off
            out.append((a, offs[:-1] + (last,)))
        return out
    if isinstance(root, (GlobalVariable, ConstantExpr)):
        return [(g, (None if off is None or o is None else o + off,))
                for g, (o,) in _global_path(root)]
    if isinstance(root, Load) and root.type.is_pointer and depth:
        g = global_base(root.operand(0))
        if isinstance(g, GlobalVariable) and not g.is_constant:
            return [(_Held(g), (off,))]
        return [(a, offs + (off,)) for a, offs in _paths(root.operand(0), aliases, depth - 1)]
    return []


def _global_path(c):
    """``[(global, (offset,))]`` for a writable global or a constant ``getelementptr``
    into one (offset None where an index is not constant), else []."""
    from ..ir.values import ConstantInt
    off = 0
    for _ in range(16):
        if isinstance(c, GlobalVariable):
            return [] if c.is_constant else [(c, (off,))]
        if not (isinstance(c, ConstantExpr) and c.opcode in ("getelementptr", "bitcast")
                and c.operands):
            return []
        if c.opcode == "getelementptr":
            idx = c.operands[1:]
            if off is not None and idx and all(isinstance(i, ConstantInt) for i in idx):
                dl = _module_datalayout(c)
                try:
                    off += idx[0].value * dl.size_in_bytes(c.source_type) \
                        + dl.offset_of(c.source_type, [i.value for i in idx[1:]])
                except Exception:  # noqa: BLE001 - unusual types: unknown offset
                    off = None
            else:
                off = None
        c = c.operand(0)
    return []


def _module_datalayout(c):
    g = c
    while isinstance(g, ConstantExpr):
        g = g.operand(0)
    return g.parent.datalayout


def _same_place(x, y, same=(), private=()) -> bool:
    """Whether two paths (``_paths``) may name the same place: the same root, roots a
    call site binds to one object (``same``), or a ``_Held`` root and any other but an
    argument of ``private``."""
    (a, p), (b, q) = x, y
    held = isinstance(a, _Held) and b not in private or isinstance(b, _Held) \
        and a not in private
    return (a is b or frozenset((a, b)) in same or held) and len(p) == len(q) and all(
        u is None or v is None or u == v for u, v in zip(p, q))


def _same_field(x, y) -> bool:
    """Whether two memory accesses may name the same field of the same struct type:
    unless both name one (TBAA struct-path tags; or, without TBAA, the struct type and
    indices of the ``getelementptr`` that forms the address) and the two differ."""
    a, b = _field(x), _field(y)
    return a is None or b is None or a[0] != b[0] or a == b


def _field(access):
    """``("tbaa", base type node, offset)`` for an access whose TBAA tag is a struct
    path, ``("gep", struct name, indices)`` for an address a constant struct-typed
    ``getelementptr`` forms, else None."""
    from ..ir import metadata as md
    tag = md.node(access.module, access.get_metadata("tbaa"))
    if isinstance(tag, md.MDNode) and len(tag.operands) >= 3:
        base, ty, off = tag.operands[:3]
        if isinstance(base, md.MDRef) and isinstance(ty, md.MDRef) and base != ty:
            return ("tbaa", base.number, str(off))
        return None
    from ..ir.instructions import GEP
    a = access.operand(1 if isinstance(access, Store) else 0)
    if isinstance(a, GEP) and a.source_type.is_struct and getattr(a.source_type, "name", None) \
            and all(getattr(x, "is_constant", False) for x in a.indices):
        return ("gep", a.source_type.name, tuple(str(x) for x in a.indices))
    return None


def _parameter_paths(functions) -> dict:
    """Parameter -> the paths (``_paths``) of the pointers the direct calls among
    ``functions`` pass for it, through the callers' own parameters."""
    fns = set(functions)
    # (a call through a pointer: every function of its type among them -- a callback
    # handed the context, as a GSL-style driver calls its `rhs`)
    calls = [(callee, inst) for fn in functions for inst in fn.instructions()
             if isinstance(inst, Call)
             for callee in ([inst.called_function] if inst.called_function is not None
                            else [f for f in functions if is_indirect(inst)
                                  and f.function_type == inst.function_type])
             if callee in fns]
    out: dict = {}
    for _ in range(4):      # (callers' parameters' paths, a few levels up)
        new: dict = {}
        for callee, inst in calls:
            for param, a in zip(callee.args, inst.args):
                if a.type.is_pointer:
                    got = _paths(a, out)
                    if got:
                        new.setdefault(param, []).extend(got)
        if new == out:
            break
        out = new
    return out


def may_access_floats(p, depth=3) -> bool:
    """Whether the code may read or write floating-point values through the pointer
    ``p`` (or through pointers loaded through it, ``depth`` levels down); calls it is
    passed to count, unless they only inspect text (``strlen``, ``strncmp``)."""
    from ..ir.instructions import ICmp
    from ..ir.walk import BoundedWalk, derives_pointer
    from .types import carries_no_derivative
    walk = BoundedWalk(p, 64)
    for x in walk:
        for u in x.uses:
            user = u.user
            if derives_pointer(u):
                walk.add(user)
            elif isinstance(user, Load):
                if user.type.is_pointer:
                    if depth == 0 or may_access_floats(user, depth - 1):
                        return True
                elif not user.type.is_int:
                    return True     # floating-point values (or vectors, structs)
            elif isinstance(user, Store) and u.index == 1:
                v = user.operand(0)
                if not (v.type.is_int or v.type.is_pointer and (carries_no_derivative(v)
                                                                or _text_block(v))):
                    return True     # (a pointer to text stored: a table of names)
            elif isinstance(user, Call):
                if not text_only(user):
                    return True
            elif not isinstance(user, ICmp):
                return True     # stored as a value, returned, turned into an integer
    return walk.exceeded


def _integers_only(block, g, functions) -> bool:
    """Whether the memory of ``block`` (stored into the pointer variable ``g``) is only
    read and written as integers: through the block itself and through every pointer
    ``functions`` load from ``g``, nothing but integer loads and stores, compares and
    ``free`` (an index workspace: it needs no shadow, and reading the variable before
    the code stores a block there is fine)."""
    from ..ir.instructions import ICmp
    from ..ir.walk import BoundedWalk, derives_pointer
    walk = BoundedWalk(block, 256)
    walk.add(*(i for f in functions for i in f.instructions()
               if isinstance(i, Load) and i.type.is_pointer
               and underlying_object(i.operand(0)) is g))
    for x in walk:
        for u in x.uses:
            user = u.user
            if derives_pointer(u):
                walk.add(user)
            elif isinstance(user, Load):
                if not user.type.is_int:
                    return False
            elif isinstance(user, Store):
                if u.index == 0 and not (x is block and user.operand(1) is g
                                         or underlying_object(user.operand(1)) is g):
                    return False    # the pointer itself stored elsewhere
                if u.index == 1 and not user.operand(0).type.is_int:
                    return False
            elif not (isinstance(user, ICmp) or isinstance(user, Call) and (
                    (user.callee_name or "") in FREE_NAMES
                    # (its integers copied: `g_diag[i] = g_rowptr[i]` as a memcpy)
                    or (user.callee_name or "").startswith(_MEMCOPY + ("llvm.memset.",)))):
                return False
    return not walk.exceeded


_HEAP = frozenset({"malloc", "calloc", "realloc"})


def heap_block_only(g) -> bool:
    """Whether the pointer variable ``g`` only ever holds blocks of the C library's
    allocator, or null: ``g`` is file-local, every store into it anywhere in the program
    stores the result of ``malloc``, ``calloc`` or ``realloc`` itself (no offset into
    one), and the block holds no pointers and is neither stored elsewhere nor handed to
    an entry point (``_plain_block``: an accessor may return it) -- a file-scope
    workspace allocated or grown on first use (``static double *buf; if (cap < n) buf =
    realloc(buf, ...)``).  A block that the program or an earlier derivative call left
    there holds values that carry no derivative in this call and is reached through no
    argument, so its shadow may start as a zeroed block of its size
    (``malloc_usable_size``): see ``runtime.fill_shadow_check``.  Asked first by
    :func:`scratch_globals`, before the derivative code (which caches what it reads)
    exists; the answer is kept."""
    if not isinstance(g, GlobalVariable):
        return False
    memo = g.parent.__dict__.setdefault("_heap_block_only", {})
    if g not in memo:
        memo[g] = _heap_block_only(g)
    return memo[g]


def _heap_block_only(g) -> bool:
    if g.linkage not in ("internal", "private") or thread_local(g) \
            or not g.value_type.is_pointer:
        return False
    for u in g.uses:
        user = u.user
        if isinstance(user, Store) and u.index == 1:
            v = user.operand(0)
            if not (isinstance(v, ConstantNull) or isinstance(v, Call)
                    and (v.callee_name or "") in _HEAP and _plain_block(v, g)):
                return False
        elif not (isinstance(user, Load) and user.type.is_pointer and _plain_block(user, g)):
            return False
    return True


def _plain_block(p, g, depth=3) -> bool:
    """Whether the block ``p`` points to (read from, or stored into, the pointer
    variable ``g``) holds no pointers -- none is loaded from it or stored into it, here,
    in the defined functions it is passed to or in the callers of those that return it,
    ``depth`` calls away: its shadow may start as zeros -- and is not stored elsewhere
    or passed to an entry point (a caller could pass it with a shadow)."""
    from ..ir.instructions import GEP, Cast, Phi, Select
    from ..ir.walk import BoundedWalk
    walk = BoundedWalk(p, 256)
    for x in walk:
        for w in x.uses:
            user = w.user
            if isinstance(user, (GEP, Cast, Phi, Select)):
                walk.add(user)
            elif isinstance(user, Load):
                if has_pointer(user.type):
                    return False
            elif isinstance(user, Store):
                if w.index == 1 and has_pointer(user.operand(0).type):
                    return False
                if w.index == 0 and user.operand(1) is not g:
                    # (kept in a local variable, -O0's `t = get_buf(n)`: where it is read)
                    slot = user.operand(1)
                    if not (isinstance(slot, Alloca) and all(
                            isinstance(y.user, Load) or isinstance(y.user, Store)
                            and y.index == 1 for y in slot.uses)):
                        return False
                    walk.add(*(y.user for y in slot.uses if isinstance(y.user, Load)))
            elif isinstance(user, Ret):
                # (an accessor returning the workspace, `double *get_buf(n)`: where its
                # callers take it, on the same conditions)
                f = user.function
                if not depth or not all(isinstance(c.user, Call)
                                        and c.user.called_function is f for c in f.uses):
                    return False
                if not all(_plain_block(c.user, g, depth - 1) for c in f.uses):
                    return False
            elif isinstance(user, Call):
                if (user.callee_name or "").startswith("__enzyme_"):
                    return False
                f = user.called_function
                if f is not None and not f.is_declaration:
                    if not depth or w.index >= len(f.args) \
                            or not _plain_block(f.args[w.index], g, depth - 1):
                        return False
    return not walk.exceeded


def _text_block(v) -> bool:
    """Whether ``v`` is a block allocated for text: its uses only write or read C
    strings (or integers: "z" stored as an ``i16`` once optimised) in it, store it,
    compare it or free it (a ``strdup`` written out)."""
    from ..ir.instructions import ICmp
    from .effects import call_effect
    eff = call_effect(getattr(v, "callee_name", None) or "") if isinstance(v, Call) else None
    if eff is None or eff.kind != "alloc":
        return False
    for u in v.uses:
        user = u.user
        if isinstance(user, Store) and (u.index == 0 or user.operand(0).type.is_int) \
                or isinstance(user, ICmp):
            continue
        if isinstance(user, Call) and (text_only(user)
                                       or (user.callee_name or "") in FREE_NAMES):
            continue
        return False
    return True


def _local(v, functions) -> bool:
    """Whether ``v`` is a local variable of one of ``functions`` (an observer registered
    in a global by its address): its shadow is a block that lives until the reverse
    sweep of its function is done, so a shadow global may hold it."""
    return isinstance(v, Alloca) and v.parent is not None \
        and v.parent.parent in functions


def _fresh(v, calls=2) -> bool:
    """Whether the pointer ``v`` is (an offset into) a block allocated here: a
    ``malloc``-like call, or a defined function (``calls`` levels deep) all of whose
    results are (NR's ``vector(nl, nh)`` returns ``v - nl + 1``)."""
    from .effects import call_effect
    v = underlying_object(v)
    if not isinstance(v, Call):
        return False
    eff = call_effect(v.callee_name or "")
    if eff is not None and eff.kind == "alloc" and eff.out is None:
        return True
    f = v.called_function
    if not calls or f is None or f.is_declaration:
        return False
    rets = [t.value for b in f.blocks for t in [b.terminator]
            if isinstance(t, Ret) and t.value is not None]
    return bool(rets) and all(_fresh(r, calls - 1) for r in rets)


def _bases(ptr, passed, tls=False):
    """The globals ``ptr`` may point into: its own, those of the pointers a phi or select
    chooses between (ping-pong buffers swapped each time step), and those passed for the
    parameter it is based on; with ``tls``, thread-local ones too (reached through
    ``llvm.threadlocal.address``)."""
    out = []
    for r in _roots(ptr):
        if tls and isinstance(r, Call) and (r.callee_name or "").startswith(_TLS_ADDRESS):
            r = r.args[0]
        g = global_base(r, 2)
        if g is not None:
            out.append(g)
        elif getattr(r, "is_argument", False):
            out.extend(passed.get(r, ()))
    return out


def _passed_roots(functions):
    """(parameter, root of the pointer passed for it) for each pointer argument of the
    direct calls among ``functions`` (roots: through GEPs, casts, phis, selects)."""
    fns = set(functions)
    for fn in functions:
        for inst in fn.instructions():
            callee = inst.called_function if isinstance(inst, Call) else None
            if callee is None or callee not in fns:
                continue
            for arg, a in zip(callee.args, inst.args):
                if a.type.is_pointer:
                    for r in _roots(a):
                        yield arg, r


def _globals_passed(functions) -> dict:
    """Parameter -> the globals that direct calls among ``functions`` pass for it
    (through the callers' own parameters, to a fixed point)."""
    edges = []       # (parameter, global or the caller's parameter passed for it)
    for arg, r in _passed_roots(functions):
        # a global (directly or through a phi), or the caller's own parameter
        g = global_base(r, 2)
        if g is not None or getattr(r, "is_argument", False):
            edges.append((arg, g if g is not None else r))
    passed: dict = {}
    changed = True
    while changed:
        changed = False
        for param, src in edges:
            new = {src} if isinstance(src, GlobalVariable) else passed.get(src, set())
            have = passed.setdefault(param, set())
            if not new <= have:
                have |= new
                changed = True
    return passed


def shadow_constant(v, shadows: dict):
    """The shadow of a constant pointer into a global that has a shadow global (the
    global itself, or a constant GEP/cast of it), else None."""
    if isinstance(v, GlobalVariable):
        return shadows.get(v)
    if isinstance(v, ConstantExpr):
        g = global_base(v)
        if g is not None and g in shadows:
            return v.clone({g: shadows[g]})
    return None


def read_only_table(v):
    """The read-only global holding floating-point values that the constant pointer
    ``v`` points into, else None."""
    g = v if isinstance(v, GlobalVariable) else global_base(v) \
        if isinstance(v, ConstantExpr) else None
    if g is None or not g.is_constant or g.initializer is None \
            or not floatish(g.value_type):
        return None
    return g


def read_only_twin(v, module, writable: bool):
    """The shadow of a constant pointer ``v`` into a read-only global holding
    floating-point values (a table of coefficients or quadrature weights), else None:
    a zero-filled internal global of the same type, ``writable`` for the reverse sweep
    (adjoints accumulated there are dropped: constant data has no derivative), read-only
    for forward mode (it reads tangents of zero).  Needed where such a pointer meets
    pointers with shadows (``c ? table : malloc'd``): the table itself as its own
    shadow would take the adjoints -- a store into read-only memory."""
    from ..ir.values import ZeroInit
    g = read_only_table(v)
    if g is None:
        return None
    name = f"{g.name}.enzyme_{'sink' if writable else 'zero'}"
    twin = module.get_global(name)
    if twin is None:
        twin = module.add_global(name, g.value_type, ZeroInit(g.value_type),
                                 linkage="internal", align=g.align or 16,
                                 constant=not writable)
    return twin if v is g else v.clone({g: twin})


def touches(fn, shadows, memo: dict) -> bool:
    """Whether ``fn`` or a defined function it calls (transitively, also through
    function pointers: ``callgraph.indirect_targets``) uses a global of ``shadows``
    (so a call to it carries derivatives through that global even with inactive
    arguments).  Decided over the whole call graph below ``fn`` at once, so
    recursion cannot hide a use."""
    if not shadows or fn is None or fn.is_declaration:
        return False
    got = memo.get(fn)
    if got is not None:
        return got
    calls: dict = {}
    result: dict = {}
    work, seen = [fn], {fn}
    while work:
        f = work.pop()
        callees, direct = [], False
        for inst in f.instructions():
            if not direct:
                direct = any(o.type.is_pointer and not o.is_instruction
                             and global_base(o) in shadows for o in inst.operands)
            if isinstance(inst, Call):
                c = inst.called_function
                if c is not None and not c.is_declaration:
                    reached = [c]
                elif is_indirect(inst):
                    # a function pointer or a vtable: whatever it may reach
                    reached = indirect_targets(f.parent, inst)
                elif (inst.callee_name or "").startswith("__kmpc_fork_call"):
                    # an OpenMP parallel region: the outlined body the runtime calls
                    reached = [a for a in inst.args if isinstance(a, Function)
                               and not a.is_declaration]
                else:
                    reached = []
                for c in reached:
                    callees.append(c)
                    if c not in seen:
                        seen.add(c)
                        work.append(c)
        calls[f] = callees
        result[f] = direct or bool(memo.get(f))
    changed = True
    while changed:
        changed = False
        for f, cs in calls.items():
            if not result[f] and any(result[c] for c in cs):
                result[f] = changed = True
    memo.update(result)
    return result[fn]
