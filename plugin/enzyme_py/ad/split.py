"""Split reverse mode: ``__enzyme_augmentfwd`` runs the augmented forward pass and
returns the tape, ``__enzyme_reverse`` runs the reverse pass on it, and
``__enzyme_augmentsize`` gives the tape's size.

The tape is EnzymePy's LIFO tape (``runtime.TAPE_TYPE``: ``{ptr data, i64 size,
i64 cap}``, :data:`HEADER` bytes) followed, for a caller-allocated tape, by its data:

- by default ``augmentfwd`` allocates the header (data grows with ``realloc``) and
  ``reverse`` frees both (``enzyme_nofree``: it frees nothing);
- with ``enzyme_allocated, N, enzyme_tape, buf`` the caller owns ``buf`` (N bytes):
  the header and the data live there, nothing is allocated or freed.  N must cover
  the tape's size, which is then needed at compile time: the tape may not grow with
  loops or recursion (compile error otherwise, and when N is too small).

``augmentfwd`` returns the tape (``void*``), or ``{tape, result}`` when its prototype
returns a struct; ``reverse`` takes the function's arguments, then the differential
of the result (when it is a float and not ``enzyme_const_return``), then the tape
(or ``enzyme_tape, t`` anywhere), and returns what ``__enzyme_autodiff`` returns.
"""

from __future__ import annotations

from ..analysis.cfg import CFG, dominators, find_loops
from ..ir import types as T
from ..ir.instructions import Call
from ..ir.values import ConstantInt
from .callsite import _args_for, _coerce, _finish, _pack, emitter_at, location
from .errors import CallSiteError
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
    n = static_tape_bytes(gen.aug)
    if n is None:
        raise CallSiteError(f"{site.call.callee_name}: the tape of '{site.fn.name}' has no size "
                            "known at compile time (it grows with loops or recursion)",
                            location=location(site.call),
                            hint="drop enzyme_allocated (the tape is then allocated for you)")
    return n + HEADER


def lower_split(site, gen, module):
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
            need = _size(site, gen)
            if site.allocated < need:
                raise CallSiteError(f"tape too small: enzyme_allocated {site.allocated} bytes, "
                                    f"but the tape of '{site.fn.name}' needs {need}",
                                    location=loc,
                                    hint=f"allocate at least {need} bytes "
                                         "(__enzyme_augmentsize gives the size)")
            hdr = _coerce(e, site.tape, T.ptr, loc)
            e.store(e.gep_bytes(hdr, HEADER), hdr, 8)
            e.store(ConstantInt(T.i64, 0), e.gep_bytes(hdr, 8), 8)
            e.store(ConstantInt(T.i64, site.allocated - HEADER), e.gep_bytes(hdr, 16), 8)
        else:
            calloc = e.declare("calloc", T.ptr, [T.i64, T.i64])
            hdr = e.call(calloc, [ConstantInt(T.i64, 1), ConstantInt(T.i64, HEADER)])
        primal = e.call(guarded(module, gen.aug, site.fn.name), args + [hdr])
        if gen.ret_shadow:
            primal = e.extractvalue(primal, [0])
        rty = call.type
        if rty.is_pointer:
            result = hdr
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
    hdr = _coerce(e, tape, T.ptr, loc)
    res = e.call(guarded(module, gen.rev, site.fn.name), rargs + [hdr])
    if site.allocated is None and not site.nofree:
        free = e.declare("free", T.void, [T.ptr])
        e.call(free, [e.load(T.ptr, hdr, 8)])
        e.call(free, [hdr])
    outs = [e.extractvalue(res, [k]) for k in range(len(gen.out_args))]
    _finish(site, _pack(e, site, outs, module, loc))
