"""Reverse mode's hooks for calls the program says something about (see
:mod:`registry`): a registered gradient is called instead of differentiating the
callee, a function declared ``function_like`` a libm function gets that function's
rule, and an inactive function contributes nothing.

A registered gradient ``{f, aug, rev}`` follows Enzyme's convention:
``aug(args...)`` (each pointer followed by its shadow) returns ``{tape, f's result}``,
or just the ``void*`` tape when ``f`` returns nothing; ``rev(args..., [d result],
tape)`` returns a struct of the derivatives of ``f``'s by-value float arguments (or
nothing).  The rule's own tape pointer is pushed on EnzymePy's tape at the call
(like a nested call's values) and popped at the call's reverse.
"""

from __future__ import annotations

from ..analysis.activity import floatish, underlying_object
from ..ir import types as T
from ..ir.values import ConstantInt, ConstantNull
from .emit import Lazy, zero
from .errors import ADError, NoDerivativeError
from .runtime import runtime_function
from .rules import contribution

__all__ = ["CallHooks"]


class CallHooks:
    def __init__(self, registry):
        self.reg = registry
        self.inactive_fns = registry.inactive_fns
        self.custom = set()   # (gen, call) pairs whose augmented part used a custom rule

    @staticmethod
    def _orig(gen, inst):
        callee = inst.called_function
        return gen.ctx.fname(callee) if callee is not None else (inst.callee_name or "")

    def inactive_store(self, p) -> bool:
        base = underlying_object(p)
        return base.is_global and base.name in self.reg.inactive_globals

    # ---------------------------------------------------------------- forward sweep
    def aug_call(self, gen, inst, A) -> bool:
        """Called for a call involving active values; True if handled here."""
        reg = self.reg
        orig = self._orig(gen, inst)
        if orig in reg.inactive_fns or orig in reg.function_like:
            return True
        rule = reg.gradients.get(orig)
        if rule is None:
            callee = inst.called_function
            if orig in reg.derivatives and (callee is None or callee.is_declaration):
                raise NoDerivativeError(
                    f"'{orig}' has only a forward-mode rule "
                    f"(__enzyme_register_derivative_{orig}); reverse mode needs a gradient",
                    location=gen.ctx.err_loc(inst),
                    hint=f"register void *__enzyme_register_gradient_{orig}[3] = "
                         f"{{(void*){orig}, (void*){orig}_aug, (void*){orig}_rev}};")
            return False
        if inst in gen.act.shadowed:
            raise ADError(f"custom gradient of '{orig}': functions returning pointers that "
                          "carry derivatives are not supported", location=gen.ctx.err_loc(inst))
        m, e = gen.ctx.module, gen.e
        aug = m.get_function(rule.fns[1])
        args = []
        for a, pa in zip(inst.args, A.args):
            args.append(pa)
            if a.type.is_pointer:
                args.append(self._shadow_aug(gen, a, inst, orig))
        params = aug.function_type.params
        if len(params) != len(args):
            raise ADError(f"the augmented forward '{aug.name}' in {rule.where} takes "
                          f"{len(params)} argument(s); the call passes {len(args)} (the "
                          "arguments, each pointer followed by its shadow)",
                          location=gen.ctx.err_loc(inst))
        e.position_before(A)
        res = e.call(aug, args)
        rty = aug.function_type.ret
        if inst.type.is_void:
            if not rty.is_pointer:
                raise ADError(f"the augmented forward '{aug.name}' must return the tape "
                              "(void*)", location=gen.ctx.err_loc(inst))
            tape, primal = res, None
        else:
            if not (rty.is_struct and len(rty.elements) >= 2 and rty.elements[1] == inst.type):
                raise ADError(f"the augmented forward '{aug.name}' must return a struct "
                              f"{{void *tape, {inst.type} result}}",
                              location=gen.ctx.err_loc(inst))
            tape = e.extractvalue(res, [0])
            primal = e.extractvalue(res, [1])
            A.replace_all_uses_with(primal)
        # the rule's reverse runs after this frame's allocas are gone: pass it snapshots
        # (taken right after the call) of the local arrays it reads, freed after it ran
        locals_ = self._locals(gen, inst)
        slot = e.call(runtime_function(m, "__enzyme_py_tape_reserve",
                                       owner=gen.ctx.fname(gen.P)),
                         [gen.tape_aug, ConstantInt(T.i64, 8 + 16 * len(locals_))])
        e.store(tape, slot, 8)
        malloc = e.declare("malloc", T.ptr, [T.i64])
        memcpy = e.declare("llvm.memcpy.p0.p0.i64", T.void, [T.ptr, T.ptr, T.i64, T.i1])
        for j, (k, base, size) in enumerate(locals_):
            pa, pb = A.args[k], gen.vmap[base]
            snap = e.call(malloc, [ConstantInt(T.i64, size)])
            e.call(memcpy, [snap, pb, ConstantInt(T.i64, size), ConstantInt(T.i1, 0)])
            off = e.binop("sub", e.cast("ptrtoint", pa, T.i64), e.cast("ptrtoint", pb, T.i64))
            e.store(snap, e.gep_bytes(slot, 8 + 16 * j), 8)
            e.store(off, e.gep_bytes(slot, 16 + 16 * j), 8)
        A.erase()
        gen.vmap[inst] = primal if primal is not None else res
        self.custom.add((gen, inst))
        return True

    def _locals(self, gen, inst):
        """(argument index, alloca, bytes) for pointer arguments into local arrays."""
        from ..ir.instructions import Alloca
        out = []
        dl = gen.ctx.module.datalayout
        for k, a in enumerate(inst.args):
            if not a.type.is_pointer:
                continue
            base = underlying_object(a)
            if isinstance(base, Alloca):
                n = base.count
                if n is not None and not isinstance(n, ConstantInt):
                    raise ADError("custom gradient: a pointer into a variable-length local "
                                  "array is not supported", location=gen.ctx.err_loc(inst))
                size = dl.size_in_bytes(base.allocated_type) * (n.value if n is not None else 1)
                out.append((k, base, size))
        return out

    def _shadow_aug(self, gen, a, inst, orig):
        if isinstance(a, ConstantNull):
            return a.clone()    # an optional argument left out (llm.c's bias = NULL)
        if a not in gen.act.shadowed:
            raise ADError(f"the custom gradient of '{orig}' needs a shadow for every pointer "
                          "argument; this one has none (constant memory)",
                          location=gen.ctx.err_loc(inst),
                          hint="pass that memory with enzyme_dup, or copy it to a local array")
        return gen._sh_aug(a, inst)

    # ---------------------------------------------------------------- reverse sweep
    def rev_call(self, gen, inst, b) -> bool:
        reg = self.reg
        orig = self._orig(gen, inst)
        if orig in reg.inactive_fns:
            return True
        act, e = gen.act, gen.e
        like = reg.libm_for(orig) if orig in reg.function_like else None
        if like is not None:
            if inst in act.active:
                rule = like[1]
                d = gen._take(inst)
                x = gen._lazy_ops(inst, b)
                r = Lazy(lambda: gen.primal(inst, b), inst.type)
                for k, a in enumerate(inst.args):
                    if a in act.active and k < len(rule) and rule[k] is not None:
                        gen._add(a, contribution(rule[k], e, x, r, d, gen.ctx.strong_zero))
            return True
        if (gen, inst) not in self.custom:
            return False
        rule = reg.gradients[orig]
        m = gen.ctx.module
        rev = m.get_function(rule.fns[2])
        locals_ = self._locals(gen, inst)
        q = e.call(runtime_function(m, "__enzyme_py_tape_pop"),
                      [gen.tape_rev, ConstantInt(T.i64, 8 + 16 * len(locals_))])
        snaps = {}
        for j, (k, _base, _size) in enumerate(locals_):
            snap = e.load(T.ptr, e.gep_bytes(q, 8 + 16 * j), 8)
            off = e.load(T.i64, e.gep_bytes(q, 16 + 16 * j), 8)
            snaps[k] = (snap, e.gep_bytes(snap, off))
        args = []
        for k, a in enumerate(inst.args):
            args.append(snaps[k][1] if k in snaps else gen.primal(a, b))
            if a.type.is_pointer:
                args.append(gen.shadow(a, b))
        if floatish(inst.type):
            args.append(gen._take(inst) if inst in act.active else zero(inst.type))
        args.append(e.load(T.ptr, q, 8))
        params = rev.function_type.params
        if len(params) != len(args):
            raise ADError(f"the reverse '{rev.name}' in {rule.where} takes {len(params)} "
                          f"argument(s); EnzymePy passes {len(args)} (the arguments, each "
                          "pointer followed by its shadow, the return value's differential "
                          "if it is a float, the tape)", location=gen.ctx.err_loc(inst))
        res = e.call(rev, args)
        free = e.declare("free", T.void, [T.ptr])
        for snap, _ in snaps.values():
            e.call(free, [snap])
        outs = [a for a in inst.args if floatish(a.type)]
        rty = rev.function_type.ret
        if rty.is_void or not outs:
            return True
        if rty.is_struct:
            n = len(rty.elements)
            for j, a in enumerate(outs[:n]):
                if a in act.active:
                    gen._add(a, self._fit(e, e.extractvalue(res, [j]), a.type))
        elif rty.is_float and len(outs) == 1:
            if outs[0] in act.active:
                gen._add(outs[0], self._fit(e, res, outs[0].type))
        else:
            raise ADError(f"the reverse '{rev.name}' returns {rty}; expected a struct of the "
                          "derivatives of the float arguments", location=gen.ctx.err_loc(inst))
        return True

    @staticmethod
    def _fit(e, v, ty):
        if v.type == ty:
            return v
        if v.type.is_float and ty.is_float:
            return e.cast("fptrunc" if v.type.width > ty.width else "fpext", v, ty)
        return v
