"""AD-specific errors (all are EnzymeError, so the driver prints them as diagnostics)."""

from __future__ import annotations

from ..errors import EnzymeError


class ADError(EnzymeError):
    """The program cannot be differentiated as written."""


class CallSiteError(ADError):
    """An ``__enzyme_*`` call whose arguments do not match the function's parameters."""


class NoDerivativeError(ADError):
    """An active instruction or call with no derivative rule and no definition."""


class MissingDefinitionError(NoDerivativeError):
    """Code to differentiate whose definition is not in the module (a function passed
    to an entry point, or an active call to one without a rule)."""


def inst_location(inst, names=None) -> str:
    loc = inst.debug_loc if inst.parent is not None else None
    fn = inst.function
    fname = (names or {}).get(fn, fn.name if fn is not None else "?")
    if loc is not None:
        f, line, col = loc
        return f"{f}:{line}:{col}" if col else f"{f}:{line}"
    return f"in function '{fname}'"


def struct_return_error(origin: str, location, stored: bool = False) -> ADError:
    """A pointer that may carry derivatives, returned by ``origin`` inside a struct that
    also holds floating-point values (a struct of pointers and integers has a shadow of
    its own; this mix has none)."""
    what = (f"an active value is stored through a pointer that '{origin}' returns inside "
            "a struct" if stored else
            f"'{origin}' returns a struct holding a pointer that may carry derivatives")
    return ADError(f"{what}; a pointer returned beside floating-point values in one struct "
                   "gets no shadow (a pointer alone, or a struct of only pointers and "
                   "integers, does)", location=location,
                   hint="return the pointer alone, or fill a struct passed by pointer, or "
                        "let the function be inlined")


def unshadowed_store_error(p, location) -> ADError:
    """An active value stored through ``p``, which has no shadow (both modes)."""
    from ..analysis.activity import struct_return_origin
    origin = struct_return_origin(p)
    if origin is not None:
        return struct_return_error(origin, location, stored=True)
    return ADError("an active value is stored into memory that has no shadow (an "
                   "enzyme_const argument, or a global that gets no shadow global: one "
                   "holding pointers or defined outside the program)", location=location,
                   hint="pass that memory with enzyme_dup and a shadow; for a global holding "
                        "pointers (a static node pool), allocate the nodes with malloc or "
                        "keep them in a local array")


def _copy_name(inst) -> str:
    """``memcpy`` or ``memmove``, for a call of either or of their intrinsics."""
    return (inst.callee_name or "memcpy").removeprefix("llvm.").split(".")[0]


def check_copy_into_unshadowed(inst, act, location, inactive_globals=(),
                               write_only=False) -> None:
    """``memcpy``/``memmove`` from memory with a shadow that holds floating-point values
    into memory without one (an ``enzyme_const`` buffer, a block reached through a global
    that gets no shadow global, read back by the differentiated code): their derivatives
    would stay behind, as for a store (``unshadowed_store_error``).  No error for a local
    whose values reach no output (``unshadowed_locals``), an inactive global, or
    (``write_only``) an ``enzyme_const`` output nothing here reads back."""
    from ..analysis.activity import underlying_object
    from ..analysis.types import memory_kinds
    from ..ir.values import ConstantInt
    dst, src, n = inst.args[0], inst.args[1], inst.args[2]
    if src not in act.shadowed or dst in act.shadowed or dst in act.unshadowed_locals \
            or write_only:
        return
    base = underlying_object(dst)
    if base.is_global and base.name in inactive_globals:
        return
    size = n.value if isinstance(n, ConstantInt) else None
    if size == 0 or not memory_kinds([src], size=size) & {"double", "float", "float-other"}:
        return
    raise ADError(f"{_copy_name(inst)} copies floating-point values that carry derivatives "
                  "into memory that has no shadow (an enzyme_const argument, or a global that "
                  "gets no shadow global: one holding pointers or defined outside the program)",
                  location=location,
                  hint="pass the destination with enzyme_dup and a shadow; for a model "
                       "object kept in a global, pass it (or its weights) to the "
                       "differentiated function instead")


def check_const_pointers_copied(inst, act, location) -> None:
    """``memcpy``/``memmove`` between memory with shadows, where the source holds, at a
    field it copies, only pointers without a shadow (``enzyme_const`` data kept in a
    local record: the record's shadow holds null there, ``Activity.unshadowed_fields``)
    and the destination is memory whose pointers are read as having shadows (a list the
    caller keeps): the null shadow bytes copied would be followed there as shadows."""
    from ..ir.values import ConstantInt
    dst, src, n = inst.args[0], inst.args[1], inst.args[2]
    if src not in act.shadowed or dst not in act.shadowed:
        return
    size = n.value if isinstance(n, ConstantInt) else None
    if not any(act.may_hold_shadowed_pointers(dst, o) for o in act.unshadowed_fields(src)
               if o is None or size is None or o < size):
        return      # (the same fields of the destination have no shadow either)
    raise ADError(f"{_copy_name(inst)} copies a record holding a pointer without a shadow "
                  "(constant data: an enzyme_const argument, a global, or a pointer loaded from "
                  "one) into memory whose pointers are read as having shadows",
                  location=location,
                  hint="pass that data with enzyme_dup and a shadow, or keep in the record "
                       "an index into the data instead of a pointer")


def check_pointer_escape(v, p, act, rctx, location, store=None) -> None:
    """A pointer with a shadow (``v``) stored into a writable global without a shadow
    global (``p`` points into it) that the differentiated code reads pointers from: a
    function reading it back would read memory whose derivatives go nowhere
    (analysis/globals.py says when such a global gets a shadow).  The same for memory
    the caller set up -- an ``enzyme_const`` context, a struct a global points to --
    read back through an argument or a global (``argument_read_back``; ``store``: the
    store, whose field tells reads of other structs apart)."""
    if not v.type.is_pointer or v not in act.shadowed:
        return
    from ..analysis.globals import kept_in_globals, pointer_read_back
    memo = rctx.__dict__.setdefault("pointer_read_back", {})
    functions = list(getattr(rctx, "clone_of", {}).values())
    hooks = getattr(rctx, "hooks", None)
    inactive = hooks.reg.inactive_globals if hooks is not None else ()
    for g in kept_in_globals(p, functions, memo):
        if g in getattr(rctx, "shadow_globals", {}) or g.name in inactive \
                or not pointer_read_back(g, functions, memo):
            continue    # (an inactive global's derivatives are dropped on purpose)
        raise ADError(f"a pointer that carries derivatives is stored into global '{g.name}', "
                      "which the differentiated code reads pointers back from, but which "
                      "gets no shadow: a pointer stored there is neither an enzyme_dup "
                      "argument, a block the code allocates nor a local variable of the "
                      "differentiated code (an enzyme_const argument, constant data, the "
                      "caller's memory, a pointer loaded from memory)", location=location,
                      hint="pass the memory to the functions that use it as an argument, or "
                           "store only enzyme_dup pointers, blocks the code allocates or its "
                           "local variables into that global")
    from ..analysis.globals import argument_read_back
    memo.setdefault("same_object", getattr(rctx, "same_object", set()))
    memo.setdefault("shadow_globals", set(getattr(rctx, "shadow_globals", {})))
    memo.setdefault("private", getattr(rctx, "private_consts", set()))
    memo.setdefault("inactive_globals", set(inactive))
    if argument_read_back(p, functions, memo, store):
        raise ADError("a pointer that carries derivatives is stored into memory without a "
                      "shadow that the caller set up (an enzyme_const argument: a context "
                      "struct; or memory a global points to), and the differentiated code "
                      "reads pointers back from there: the derivatives read or written "
                      "through them would be lost",
                      location=location,
                      hint="pass that memory with enzyme_dup and a shadow of it (the "
                           "shadow's pointer fields get the shadows' pointers), or pass the "
                           "pointer itself to the functions that use it")


def unshadowed_atomic_error(location) -> ADError:
    """An active value added atomically into memory that has no shadow (both modes)."""
    return ADError("an active value is added into memory that has no shadow (a global, or "
                   "an enzyme_const argument)", location=location,
                   hint="pass that memory with enzyme_dup and a shadow")


def no_shadow_rule_error(inst, location) -> ADError:
    """An instruction producing a pointer (or a struct holding one) whose shadow neither
    generator knows how to build."""
    from ..analysis.activity import struct_return_origin
    origin = struct_return_origin(inst)
    if origin is not None:
        return struct_return_error(origin, location)
    return ADError(f"no shadow rule for '{inst.opcode}' producing a pointer", location=location)


def indirect_call_error(inst, location) -> NoDerivativeError:
    """The error for an active call that names no function: inline assembly (its own
    text, and what avoids it), or a pointer no candidate function was found for."""
    from ..analysis.effects import inline_asm_code
    code = inline_asm_code(inst)
    if code is not None and not code.strip():
        return NoDerivativeError(
            "an optimisation barrier (empty inline assembly holding a value) on values "
            "that carry derivatives: the code around one relies on how floating-point "
            "arithmetic rounds (Eigen's SSE2 rounding adds and subtracts 2^52), whose "
            "derivative as arithmetic would be wrong", location=location,
            hint="give the function that contains it a custom derivative "
                 "(__enzyme_register_gradient_<name>); for Eigen's vectorised exp, tanh "
                 "and rounding, build with -DEIGEN_DONT_VECTORIZE (or with SSE4.1, "
                 "-msse4.1, whose rounding is one instruction)")
    if code is not None:
        return NoDerivativeError(
            f"inline assembly '{code}' computes values that carry derivatives and has no "
            "derivative rule", location=location,
            hint="write the operation in C, or give the function that contains it a "
                 "custom derivative (__enzyme_register_gradient_<name>); where its result "
                 "only feeds comparisons, optimising (-O1 and above) lets EnzymePy see "
                 "that; Eigen's SSE code uses inline assembly under clang: "
                 "-DEIGEN_DONT_VECTORIZE avoids it")
    return NoDerivativeError("indirect call with active arguments cannot be differentiated",
                             location=location, hint="call the function directly")


def external_call_error(name: str, location, forward: bool) -> MissingDefinitionError:
    """The error for an active call to a function with no body and no rule: how to
    provide one (a definition, a registered rule, or marking it inactive) -- except for
    an LLVM intrinsic, which cannot be defined or registered."""
    if name.startswith("llvm."):
        base = name.split(".")[1]
        hint = ("a variadic function receiving values that carry derivatives is supported "
                "where the differentiated code calls it by name, on x86-64 Linux and "
                "macOS (see ad/variadic.py); not through a function pointer or a va_arg "
                "instruction: call it directly, or pass the values in an array"
                if base in ("va_start", "va_copy", "va_end")
                else "EnzymePy has no rule for this intrinsic: please report it; meanwhile "
                     "move the code it comes from into a function marked inactive or with a "
                     "custom derivative")
        return MissingDefinitionError(f"the LLVM intrinsic '{name}' touches values that carry "
                                      "derivatives and has no derivative rule",
                                      location=location, hint=hint)
    if forward:
        hint = (f"make the definition of '{name}' visible (same program / LTO), register a "
                f"forward derivative (__enzyme_register_derivative_{name}) or mark it "
                "inactive (__enzyme_inactivefn)")
    else:
        hint = (f"make the definition of '{name}' visible (same program / LTO), or register "
                f"a custom gradient (void *__enzyme_register_gradient_{name}[3] = "
                f"{{{name}, {name}_aug, {name}_rev}}), or mark it inactive "
                f"(__enzyme_inactivefn); see enzyme.h")
    return MissingDefinitionError(f"cannot differentiate call to external function '{name}': "
                                  "no definition and no derivative rule", location=location,
                                  hint=hint)


def untyped_copy_error(location):
    """An integer copy between memory with shadows where type analysis cannot tell
    integers from floating-point values, or the integer is a piece of a double (a word
    loop over ``int32_t *`` views: ``augmented.word_of_float``)."""
    return ADError("an integer-typed copy of memory that may hold floating-point values "
                   "(type analysis could not tell)", location=location,
                   hint="the bytes pass through memory the code also uses as integers, or "
                        "never shows the type of (a char buffer), or the integers are "
                        "pieces of a double (a copy loop over int32_t or int16_t words): "
                        "copy the values with their own type (assign the double or the "
                        "struct) or with memcpy, instead of as integer words or bytes")


def merged_copy_error(location, lost=False):
    """A store of integers merged from loads of memory that may hold floats
    (``augmented.merged_copy_of_floats``), or of an integer loaded from such memory
    that no rule follows (``augmented.float_bytes_lost``)."""
    how = ("between memory with and without a shadow (a byte-wise copy: activity "
           "analysis does not follow floating-point values through integers)" if lost else
           "merged by a phi, select or vector shuffle (a byte-wise copy or swap that the "
           "optimiser unrolled)")
    return ADError("an integer-typed copy of memory that may hold floating-point values, "
                   f"{how}: its derivatives cannot follow the bytes",
                   location=location,
                   hint="copy the values with their own type (assign the double or the "
                        "struct, or memcpy the whole value) instead of as bytes")
