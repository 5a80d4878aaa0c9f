"""Split reverse mode: ``__enzyme_augmentfwd`` runs the augmented forward pass and
returns the tape, ``__enzyme_reverse`` runs the reverse pass on it, and
``__enzyme_augmentsize`` gives the tape's size.

The tape is EnzymePy's LIFO tape (``runtime.TAPE_TYPE``: a header ``{ptr data, i64
size, i64 cap}`` of :data:`HEADER` bytes and the data it points at):

- by default ``augmentfwd`` allocates the header (data grows with ``realloc``) and
  ``reverse`` frees both; with ``enzyme_nofree`` the reverse pass leaves the tape as
  it found it, so that it can run again (one Jacobian row per reverse of one forward
  pass): it runs a copy of the reverse functions that frees nothing (the loop caches
  and shadows the tape points at) and the call puts the tape's size back afterwards;
- with ``enzyme_allocated, N, enzyme_tape, buf`` the caller owns ``buf`` (N bytes):
  the data live there (the header in the caller's frame: ``buf`` holds what Enzyme's
  tape would, ``sizeof`` the cached values), nothing is allocated or freed, and the
  reverse pass leaves the tape as it found it (it may run again).  The tape's size
  must be known at compile time (no pushes in loops or recursion); N is checked
  against it at compile time, or when the call runs if N is not a constant (a tape that
  grows with loops or recursion, or a constant N too small, is a compile error).

``augmentfwd`` returns the tape (``void*``), or ``{tape, result}`` when its prototype
returns a struct; ``reverse`` takes the function's arguments, then the differential
of the result (when it is a float and not ``enzyme_const_return``), then the tape
(or ``enzyme_tape, t`` anywhere), and returns what ``__enzyme_autodiff`` returns.
"""

from __future__ import annotations

from ..analysis.cfg import CFG, dominators, find_loops
from ..ir import types as T
from ..ir.instructions import Alloca, Call
from ..ir.values import ConstantInt
from .callsite import _args_for, _coerce, _finish, _pack, emitter_at, location
from .errors import CallSiteError
from .runtime import TAPE_TYPE, _string
from .unwind import guarded

__all__ = ["lower_split", "static_tape_bytes", "HEADER"]

HEADER = 24  # sizeof(TAPE_TYPE)


def static_tape_bytes(aug, _stack=None):
    """Bytes the augmented function ``aug`` pushes on its tape (last parameter), or
    None when that is not known at compile time (pushes in loops, recursion, or any
    use of the tape other than a constant-size push or a nested augmented call)."""
    stack = _stack or set()
    if aug in stack:
        return None
    stack = stack | {aug}
    tape = aug.args[-1]
    cfg = CFG(aug)
    loops = find_loops(cfg, dominators(cfg))
    total = 0
    for u in tape.uses:
        c = u.user
        if not isinstance(c, Call) or c.parent is None or loops.in_loop(c.parent):
            return None
        name = c.callee_name or ""
        args = c.args
        if name.startswith("__enzyme_py_tape_reserve") and u.index == 0 and \
                isinstance(args[1], ConstantInt):
            total += args[1].value
        elif name.startswith("augmented_") and u.index == len(args) - 1 \
                and c.called_function is not None:
            n = static_tape_bytes(c.called_function, stack)
            if n is None:
                return None
            total += n
        else:
            return None
    return total


def _size(site, gen):
    """Bytes of a caller-allocated tape: what the augmented forward pass pushes."""
    n = static_tape_bytes(gen.aug)
    if n is None:
        raise CallSiteError(f"{site.call.callee_name}: the tape of '{site.fn.name}' has no size "
                            "known at compile time (it grows with loops or recursion)",
                            location=location(site.call),
                            hint="drop enzyme_allocated (the tape is then allocated for you)")
    return n


def _caller_tape(e, site, gen, module, size):
    """The header of the caller's tape memory (``enzyme_allocated, N, enzyme_tape,
    buf``), in the caller's frame: the buffer holds only what the forward pass pushes,
    as in Enzyme, whose programs allocate ``sizeof`` the cached values.  ``size``: the
    bytes on the tape (0 before the forward pass; None: all of them, for the reverse
    pass, which may then run again).  N is checked against the tape's size: at compile
    time when it is a constant, else when the call runs."""
    call = site.call
    loc = location(call)
    need = _size(site, gen)
    n = site.allocated
    if isinstance(n, int):
        if n < need:
            raise CallSiteError(f"tape too small: enzyme_allocated {n} bytes, but the tape of "
                                f"'{site.fn.name}' needs {need}", location=loc,
                                hint=f"allocate at least {need} bytes "
                                     "(__enzyme_augmentsize gives the size)")
    else:
        msg = (f"enzyme: enzyme_allocated gives fewer bytes than the tape of "
               f"'{site.fn.name}' needs ({need}; __enzyme_augmentsize gives the size): "
               "aborting\n")
        e.call(_tape_check(module), [_coerce(e, n, T.i64, loc), ConstantInt(T.i64, need),
                                     _string(module, msg),
                                     ConstantInt(T.i64, len(msg.encode()))])
    hdr = Alloca(TAPE_TYPE, align=8)
    call.function.entry_block.insert(0, hdr)
    e.store(_coerce(e, site.tape, T.ptr, loc), hdr, 8)
    e.store(ConstantInt(T.i64, need if size is None else size), e.gep_bytes(hdr, 8), 8)
    e.store(ConstantInt(T.i64, need), e.gep_bytes(hdr, 16), 8)
    return hdr


def _tape_check(module):
    """``__enzyme_py_tape_check(n, need, msg, len)``: abort with the message when
    ``n < need``."""
    from .emit import Emitter
    from .unwind import _unwound
    name = "__enzyme_py_tape_check"
    fn = module.get_function(name)
    if fn is not None:
        return fn
    fn = module.add_function(name, T.FunctionType(T.void, [T.i64, T.i64, T.ptr, T.i64]),
                             linkage="internal", fn_attrs="nounwind", unique=False)
    n, need, msg, size = fn.args
    e = Emitter(module)
    entry, bad, ok = (fn.append_basic_block(x) for x in ("entry", "bad", "ok"))
    e.position_at_end(entry)
    e.cbranch(e.icmp("ult", n, need), bad, ok)
    e.position_at_end(bad)
    e.call(_unwound(module), [msg, size], fn_attrs="noreturn nounwind")
    e.unreachable()
    e.position_at_end(ok)
    e.ret()
    return fn


_FREES = ("free", "__enzyme_py_cache_free", "__enzyme_py_shadow_free")


def _keeping(module, rev, reverses, loc):
    """A copy of the reverse function ``rev`` that frees nothing, calling such copies of
    the reverse functions it calls (``reverses``: every generated one); it pops the
    tape as ``rev`` does.  A parallel region's reverse (threads' own tapes, consumed
    as they are read) is a compile error."""
    from .runtime import runtime_base
    name = f"{rev.name}.keep"
    got = module.get_function(name)
    if got is not None:
        return got
    keep = rev.clone(name, {})
    for inst in list(keep.instructions()):
        if not isinstance(inst, Call):
            continue
        callee = runtime_base(inst.callee_name or "")
        if callee in _FREES:
            inst.erase()
        elif callee.startswith("__kmpc_fork"):
            raise CallSiteError("enzyme_nofree: the reverse pass of a parallel region cannot "
                                "run twice on one tape (each thread's part of the tape is "
                                "used up as it is read)", location=loc,
                                hint="run the augmented forward pass again for each reverse "
                                     "pass")
        elif inst.called_function in reverses:
            inst.callee = _keeping(module, inst.called_function, reverses, loc)
    return keep


def lower_split(site, gen, module, reverses=frozenset()):
    """``reverses``: every reverse function of the round (see ``_keeping``)."""
    call = site.call
    loc = location(call)
    e = emitter_at(call)
    if site.mode == "size":
        _finish(site, _coerce(e, ConstantInt(T.i64, _size(site, gen)), call.type, loc)
                if not call.type.is_void else None)
        return
    if site.allocated is not None and site.tape is None:
        raise CallSiteError(f"{call.callee_name}: enzyme_allocated needs the tape memory: pass "
                            "enzyme_tape, ptr as well", location=loc)
    args = _args_for(e, site, None, loc)
    if site.mode == "augment":
        if site.tape is not None:
            if site.allocated is None:
                raise CallSiteError(f"{call.callee_name}: enzyme_tape in the augmented forward "
                                    "pass needs enzyme_allocated, N (the size of the memory)",
                                    location=loc)
            hdr = _caller_tape(e, site, gen, module, 0)
        else:
            calloc = e.declare("calloc", T.ptr, [T.i64, T.i64])
            hdr = e.call(calloc, [ConstantInt(T.i64, 1), ConstantInt(T.i64, HEADER)])
        primal = e.call(guarded(module, gen.aug, site.fn.name), args + [hdr])
        if gen.ret_shadow:
            primal = e.extractvalue(primal, [0])
        rty = call.type
        if rty.is_pointer:
            result = _coerce(e, site.tape, T.ptr, loc) if site.tape is not None else hdr
        elif rty.is_void and site.sret is None:
            result = None
        else:
            vals = [hdr] + ([] if primal.type.is_void else [primal])
            result = _pack(e, site, vals, module, loc)
        _finish(site, result)
        return
    # __enzyme_reverse
    extras = list(site.extras)
    rargs = list(args)
    if gen.ret_active:
        if not extras:
            raise CallSiteError(f"{call.callee_name}: missing the differential of "
                                f"'{site.fn.name}''s result (before the tape)", location=loc,
                                hint="pass it after the arguments, or use enzyme_const_return")
        rargs.append(_coerce(e, extras.pop(0), site.fn.return_type, loc))
    if site.tape is not None:
        tape = site.tape
    elif extras:
        tape = extras.pop(0)
    else:
        raise CallSiteError(f"{call.callee_name}: missing the tape (the last argument, or "
                            "enzyme_tape, t)", location=loc)
    if extras:
        raise CallSiteError(f"{call.callee_name}: too many arguments for '{site.fn.name}'",
                            location=loc)
    if site.allocated is not None:
        site.tape = tape
        hdr = _caller_tape(e, site, gen, module, None)
        rev = _keeping(module, gen.rev, reverses, loc) if site.nofree else gen.rev
        res = e.call(guarded(module, rev, site.fn.name), rargs + [hdr])
    elif site.nofree:
        # the tape stays as it was: the reverse pass may run on it again
        hdr = _coerce(e, tape, T.ptr, loc)
        size_at = e.gep_bytes(hdr, 8)
        size = e.load(T.i64, size_at, 8)
        res = e.call(guarded(module, _keeping(module, gen.rev, reverses, loc), site.fn.name),
                     rargs + [hdr])
        e.store(size, size_at, 8)
    else:
        hdr = _coerce(e, tape, T.ptr, loc)
        res = e.call(guarded(module, gen.rev, site.fn.name), rargs + [hdr])
    if site.allocated is None and not site.nofree:
        free = e.declare("free", T.void, [T.ptr])
        e.call(free, [e.load(T.ptr, hdr, 8)])
        e.call(free, [hdr])
    outs = [e.extractvalue(res, [k]) for k in range(len(gen.out_args))]
    _finish(site, _pack(e, site, outs, module, loc))
