"""Code both generators emit for the calls of ``analysis.effects``' table that write
memory without carrying derivatives (``fread``, ``strcpy``, ``snprintf``...), and the
memmove-safe adjoint of a copy.

A call of kind ``writes`` overwrites bytes behind some pointer arguments with data that
has no derivative.  Where such a pointer has a shadow, the shadow bytes the call
overwrote must not keep the old derivative: forward mode zeroes the tangent bytes right
after the call; reverse mode zeroes the adjoint bytes at the call's reverse (the adjoint
of a value the program overwrote goes nowhere).  :func:`written` computes, right after
the primal call, how many bytes each argument got, so both sweeps use the same count.
"""

from __future__ import annotations

import re

from ..analysis.effects import call_effect
from ..ir import types as T
from ..ir.values import ConstantInt, ConstantNull
from .errors import ADError

__all__ = ["shadowed_writes", "scanf_writes", "written", "fill_shadow", "memset0", "copy_adjoint",
           "strip_type_hints"]


def shadowed_writes(inst, has_shadow, where):
    """The ``(argument index, size)`` pairs of a ``writes`` call whose pointer has a
    shadow (``has_shadow(v)``); an error where the size is not known."""
    eff = call_effect(inst.callee_name or "")
    if eff is None or not eff.writes:
        return []
    out = []
    args = inst.args
    for k, size in eff.writes:
        if k >= len(args) or not args[k].type.is_pointer or not has_shadow(args[k]):
            continue
        if size[0] == "unknown":
            known = scanf_writes(inst)
            if known is not None:
                return [(j, sz) for j, sz in known
                        if j < len(args) and args[j].type.is_pointer and has_shadow(args[j])]
            raise ADError(f"'{inst.callee_name}' writes through argument {k + 1} an amount "
                          "of data its format decides, into memory that carries derivatives",
                          location=where,
                          hint="read into a separate local variable (or a buffer passed "
                               "with enzyme_const) and copy the value afterwards")
        out.append((k, size))
    return out


# the scanf family (glibc's C99 and C23 spellings too): the format's argument index
_SCANF_FORMAT = {f"{p}{n}": k for n, k in (("scanf", 0), ("fscanf", 1), ("sscanf", 1))
                 for p in ("", "__isoc99_", "__isoc23_")}
_INT_BYTES = {"hh": 1, "h": 2, "": 4, "l": 8, "ll": 8, "q": 8, "j": 8, "z": 8, "t": 8}
_FLOAT_BYTES = {"": 4, "l": 8, "L": 16}
_CONVERSION = re.compile(r"%(\*?)(\d*)(hh|h|ll|l|q|j|z|t|L)?([diouxXnaefgEGAscp%]|\[\^?\]?[^]]*\])")


def _format_text(v):
    """The text of a constant C string (a global's initialiser, or a constant offset
    into one), or None."""
    from ..ir.values import ConstantExpr, ConstantString
    off = 0
    if isinstance(v, ConstantExpr) and v.opcode == "getelementptr" and len(v.operands) == 2 \
            and getattr(v.operand(1), "value", None) is not None \
            and v.source_type == T.i8:
        v, off = v.operand(0), v.operand(1).value
    init = getattr(v, "initializer", None) if getattr(v, "is_global", False) else None
    if not isinstance(init, ConstantString) or not getattr(v, "is_constant", False):
        return None
    body = init.text[2:-1] if init.text.startswith('c"') else init.text.strip('"')
    text = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), body)
    return text[off:].split("\0", 1)[0]


def scanf_writes(inst):
    """For a call of the scanf family with a constant format: ``(argument index,
    size)`` for each pointer the format stores through -- ``("scanf", j, bytes)``, or
    ``bytes`` ``"cstr"`` for a string (``%s``, ``%[...]``) -- ``j`` counting the
    conversions that assign before it (the call's result says how many did); None where
    the format is not known at compile time or has a conversion not listed here (wide
    characters)."""
    from ..ir.instructions import Select
    k = _SCANF_FORMAT.get(inst.callee_name or "")
    args = inst.args
    if k is None or k >= len(args):
        return None
    fmt = args[k]
    # (a choice of constant formats that store the same: `sci ? "%le" : "%lf"`)
    texts = [_format_text(f) for f in (fmt.operands[1:] if isinstance(fmt, Select)
                                       else [fmt])]
    got = [None if t is None else _conversions(t, k + 1) for t in texts]
    return got[0] if got[0] is not None and all(g == got[0] for g in got) else None


def _conversions(text, arg):
    """``scanf_writes``'s answer for the format ``text``, the first pointer at ``arg``."""
    out, assigned, pos = [], 0, 0
    while True:
        pct = text.find("%", pos)
        if pct < 0:
            return out
        m = _CONVERSION.match(text, pct)
        if m is None:
            return None
        pos = m.end()
        star, width, length, conv = m.group(1), m.group(2), m.group(3) or "", m.group(4)
        if conv == "%":
            continue
        if star:
            continue        # read and dropped: no argument
        if conv in "diouxXn":
            size = ("scanf", assigned - (conv == "n"), _INT_BYTES[length])
        elif conv in "aefgEGA":
            if length not in _FLOAT_BYTES:
                return None
            size = ("scanf", assigned, _FLOAT_BYTES[length])
        elif conv == "p":
            size = ("scanf", assigned, 8)
        elif conv == "c":
            if length:
                return None
            size = ("scanf", assigned, int(width or 1))
        else:           # %s, %[...]: characters and their NUL
            if length:
                return None
            size = ("scanf", assigned, "cstr")
        out.append((arg, size))
        arg += 1
        assigned += conv != "n"


def _i64(e, v):
    if v.type == T.i64:
        return v
    return e.cast("zext" if v.type.width < 64 else "trunc", v, T.i64)


def written(e, k, size, args, result):
    """Bytes written through argument ``k`` (an i64), emitted at the emitter's position
    right after the call; ``args``/``result``: the call's operands and result in the
    function being built."""
    kind = size[0]
    zero = ConstantInt(T.i64, 0)
    if kind == "arg":
        return _i64(e, args[size[1]])
    if kind == "mul":
        return e.binop("mul", _i64(e, args[size[1]]), _i64(e, args[size[2]]))
    if kind == "ret_mul":
        return e.binop("mul", _i64(e, result), _i64(e, args[size[1]]))
    if kind in ("const", "textptr"):
        if k is None:
            return ConstantInt(T.i64, size[1])
        return e.select(e.icmp("eq", args[k], ConstantNull(T.ptr)), zero,
                        ConstantInt(T.i64, size[1]))
    if kind == "scanf":
        # stored only where the conversion assigned: the call's result counts them
        done = e.icmp("sgt", result, ConstantInt(result.type, size[1]))
        if size[2] == "cstr":
            from .runtime import _string
            strlen = e.declare("strlen", T.i64, [T.ptr])
            text = e.select(done, args[k], _string(e.module, ""))
            n = e.binop("add", e.call(strlen, [text]), ConstantInt(T.i64, 1))
        else:
            n = ConstantInt(T.i64, size[2])
        return e.select(done, n, zero)
    if kind == "cstr":
        strlen = e.declare("strlen", T.i64, [T.ptr])
        n = e.binop("add", e.call(strlen, [args[k]]), ConstantInt(T.i64, 1))
        guard = size[1]
        if guard == "ret":
            return e.select(e.icmp("eq", result, ConstantNull(T.ptr)), zero, n)
        if guard is not None:
            return e.select(e.icmp("eq", _i64(e, args[guard]), zero), zero, n)
        return n
    raise ValueError(size)


def fill_shadow(e, k, size, shadow, primal_arg, n):
    """After a ``writes`` call: the shadow bytes of argument ``k`` that the call wrote
    (``n`` of them) -- zero (no derivative), or, for a pointer into text the call stored
    (``strtod``'s end pointer: ``"textptr"``), the same pointer: text is its own shadow,
    so code that follows the pointer reads the same characters through the shadow."""
    if size[0] == "textptr":
        memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
        e.call(memcpy, [shadow, primal_arg, _i64(e, n), ConstantInt(T.i1, 0)])
    else:
        memset0(e, shadow, n)


def memset0(e, p, n):
    memset = e.declare("llvm.memset.p0.i64", T.void, [T.ptr, T.i8, T.i64, T.i1])
    e.call(memset, [p, ConstantInt(T.i8, 0), _i64(e, n), ConstantInt(T.i1, 0)])


def unless_own_shadow(e, shadow, primal, n):
    """``n``, or 0 where ``shadow`` is the primal memory itself: zeroing a shadow there
    would overwrite the program's data -- integers a user's shadow struct shares with
    the primal (llm.c's model copied as its own shadow, its token buffer kept), which
    type analysis could not tell from floats.  (Adjoints of floats kept in the primal
    memory would be the program's data anyway.)"""
    n = _i64(e, n)
    return e.select(e.icmp("eq", shadow, primal), ConstantInt(T.i64, 0), n)


def copy_adjoint(e, module, ty, dshadow, sshadow, n, overlap):
    """The reverse of copying ``n`` bytes of ``ty`` data from ``s`` to ``d``:
    ``ds[i] += dd[i]; dd[i] = 0``.  ``overlap`` (memmove): the two ranges may overlap,
    so every adjoint of the destination is read before any is zeroed or added to."""
    from .runtime import runtime_function
    name = "__enzyme_py_memmove_adj" if overlap else "__enzyme_py_memcpy_adj"
    e.call(runtime_function(module, name, ty), [dshadow, sshadow, _i64(e, n)])


def strided_copy_adjoint(e, module, ty, dshadow, sshadow, n, stride, off, size, overlap=False):
    """The reverse of copying the ``size`` bytes of ``ty`` data at ``off`` in each
    ``stride``-byte element of ``n`` bytes (a field run of an array of structs);
    ``overlap``: by a memmove."""
    from .runtime import runtime_function
    fn = runtime_function(module, "__enzyme_py_strided_move_adj" if overlap
                          else "__enzyme_py_strided_adj", ty)
    e.call(fn, [dshadow, sshadow, _i64(e, n)] + [ConstantInt(T.i64, v)
                                                 for v in (stride, off, size)])


def strip_type_hints(module):
    """Remove the calls of ``__enzyme_double(p, bytes)`` and friends (type analysis read
    them; they do nothing at run time) and their declarations, so the program links."""
    from ..analysis.effects import TYPE_HINTS
    for name in TYPE_HINTS:
        fn = module.get_function(name)
        if fn is None or not fn.is_declaration:
            continue
        for u in list(fn.uses):
            c = u.user
            if c.is_instruction and getattr(c, "called_function", None) is fn \
                    and not c.users:
                c.erase()
        if not fn.uses:
            fn.erase()
