"""Every instruction kind and opcode of the IR model is classified (ad/kinds.py): a rule,
inactive with a reason, or an error where it touches derivatives; and the one
call-effects table (analysis/effects.py) agrees with the derivative rules."""

from __future__ import annotations

import inspect

import pytest

from enzyme_py.ad import kinds, rules
from enzyme_py.ad.errors import NoDerivativeError
from enzyme_py.analysis.activity import Activity
from enzyme_py.analysis.effects import call_effect, known_names, libm_base
from enzyme_py.ir import instructions as I
from enzyme_py.ir import parse_module

# LLVM LangRef (LLVM 22), 'atomicrmw' operations
LANGREF_ATOMICRMW = ("xchg add sub and nand or xor max min umax umin fadd fsub fmax fmin "
                     "fmaximum fminimum uinc_wrap udec_wrap usub_cond usub_sat").split()


def _all_instruction_classes():
    out = set()
    for _, obj in inspect.getmembers(I, inspect.isclass):
        if issubclass(obj, I.Instruction) and obj is not I.Instruction:
            out.add(obj)
    work = [I.Instruction]
    while work:
        c = work.pop()
        for s in c.__subclasses__():
            if s.__module__.startswith("enzyme_py.ir"):
                out.add(s)
                work.append(s)
    return out - {I.Terminator, I._FuncletPad}


@pytest.mark.parametrize("cls", sorted(_all_instruction_classes(), key=lambda c: c.__name__))
def test_every_instruction_kind_is_classified(cls):
    status, reason = kinds.INSTRUCTIONS[cls]
    assert status in (kinds.RULE, kinds.INACTIVE, kinds.ERROR, kinds.NEVER)
    assert len(reason) > 10


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_both_generators_visit_exactly_the_kinds_with_a_rule(mode):
    """The generators are driven by the registry: every kind ``kinds.INSTRUCTIONS``
    gives a rule has a visitor in the adjoint visitor (reverse) and the tangent visitor
    (forward), and no kind without a rule has one (but the no-op for an invoke that
    forward mode meets uninvolved), so a rule cannot be added in one place only."""
    from enzyme_py.ad.adjoint import ADJOINT
    from enzyme_py.ad.forward import TANGENT
    table = ADJOINT if mode == "reverse" else TANGENT
    with_rule = {c for c, (status, _) in kinds.INSTRUCTIONS.items() if status == kinds.RULE}
    for cls in with_rule:
        assert kinds.visitor(table, object.__new__(cls)) is not None, cls.__name__
    extra = {c for c in table if c not in with_rule} - {I.Invoke}
    assert not extra, sorted(c.__name__ for c in extra)
    # classes of the model without an entry of their own find their base class's
    for cls in _all_instruction_classes():
        if kinds.INSTRUCTIONS[cls][0] == kinds.RULE:
            assert kinds.visitor(table, object.__new__(cls)) is not None


def test_every_binary_opcode_is_classified():
    assert set(kinds.BINARY_OPCODES) == set(I.BINARY_OPS)
    for op, status in kinds.BINARY_OPCODES.items():
        assert (status == kinds.RULE) == (op in rules.BINARY), op


def test_every_cast_opcode_is_classified():
    assert set(kinds.CAST_OPCODES) == set(I.CAST_OPS)
    for op in ("fpext", "fptrunc", "bitcast"):
        assert kinds.CAST_OPCODES[op] == kinds.RULE and rules.CASTS[op] == "cast-back"


def test_every_atomicrmw_operation_is_classified():
    assert set(kinds.ATOMIC_OPERATIONS) >= set(LANGREF_ATOMICRMW)
    for op, status in kinds.ATOMIC_OPERATIONS.items():
        assert (status == kinds.RULE) == (op in rules.ATOMICS), op


HEAD = """target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
"""


def _check_all(body, kinds_of_args):
    m = parse_module(HEAD + body)
    fn = next(f for f in m.functions if not f.is_declaration)
    act = Activity(fn, kinds_of_args)
    for inst in fn.instructions():
        kinds.check(inst, act, "here")
    return act


@pytest.mark.parametrize("op", ["fmax", "fmin", "fmaximum"])
def test_atomicrmw_without_rule_is_an_error(op):
    with pytest.raises(NoDerivativeError, match=f"atomicrmw {op}"):
        _check_all(f"""define void @f(ptr %p, double %x) {{
  %o = atomicrmw {op} ptr %p, double %x monotonic, align 8
  ret void
}}""", ["dup", "out"])


def test_atomicrmw_fadd_is_active_and_has_a_rule():
    act = _check_all("""define double @f(ptr %p, double %x) {
  %o = atomicrmw fadd ptr %p, double %x monotonic, align 8
  ret double %o
}""", ["dup", "const"])
    assert any(isinstance(i, I.AtomicRMW) for i in act.active)


def test_integer_atomic_on_memory_of_unknown_type_is_an_error():
    with pytest.raises(NoDerivativeError, match="integer operation"):
        _check_all("""define void @f(ptr %p, i64 %x) {
  %o = atomicrmw xchg ptr %p, i64 %x monotonic, align 8
  ret void
}""", ["dup", "const"])


def test_integer_atomic_on_integer_memory_is_inactive():
    _check_all("""define void @f(ptr %p, i64 %x) {
  %v = load i64, ptr %p, align 8
  %o = atomicrmw add ptr %p, i64 %x monotonic, align 8
  ret void
}""", ["dup", "const"])


def test_cmpxchg_on_shadowed_memory_is_an_error():
    with pytest.raises(NoDerivativeError, match="cmpxchg"):
        _check_all("""define void @f(ptr %p, i64 %a, i64 %b) {
  %d = load double, ptr %p, align 8
  %o = cmpxchg ptr %p, i64 %a, i64 %b seq_cst seq_cst, align 8
  ret void
}""", ["dup", "const", "const"])


def test_va_arg_of_a_double_is_an_error():
    with pytest.raises(NoDerivativeError, match="va_arg"):
        _check_all("""define double @f(ptr %ap) {
  %x = va_arg ptr %ap, double
  ret double %x
}""", ["const"])


def test_pointer_through_integer_is_an_error():
    """An address made of two pointers' addresses: no shadow follows it."""
    with pytest.raises(NoDerivativeError, match="inttoptr"):
        _check_all("""define double @f(ptr %p, ptr %r) {
  %i = ptrtoint ptr %p to i64
  %k = ptrtoint ptr %r to i64
  %j = xor i64 %i, %k
  %q = inttoptr i64 %j to ptr
  %x = load double, ptr %q, align 8
  ret double %x
}""", ["dup", "dup"])


def test_address_rounded_as_an_integer_is_shadowed():
    """One pointer's address rounded to an alignment: the shadow's, rounded the same
    way, is its shadow (analysis.activity.address_source)."""
    act = _check_all("""define double @f(ptr %p, i64 %a) {
  %i = ptrtoint ptr %p to i64
  %m = sub i64 0, %a
  %i2 = add i64 %i, 63
  %j = and i64 %i2, %m
  %q = inttoptr i64 %j to ptr
  %x = load double, ptr %q, align 8
  ret double %x
}""", ["dup", "const"])
    q = next(i for i in act.fn.instructions() if i.name == "q")
    x = next(i for i in act.fn.instructions() if i.name == "x")
    assert q in act.shadowed and x in act.active


def test_fence_and_inactive_atomics_pass():
    _check_all("""define double @f(ptr %p, double %x) {
  fence seq_cst
  %y = fmul double %x, %x
  ret double %y
}""", ["const", "out"])


# ------------------------------------------------------------------ the call-effects table

def test_every_libm_rule_is_a_pure_math_function():
    from enzyme_py.analysis.effects import X86_MATH
    for base in rules.LIBM:
        if base.startswith("x86_"):     # no C function: the x86 intrinsics' rules
            assert base in X86_MATH.values(), base
            continue
        assert libm_base(base) == base, base
        eff = call_effect(base)
        assert eff is not None and eff.kind == "math", base
    for name in X86_MATH:
        assert call_effect(name).kind == "math" and rules.libm_rule(name) is not None
    for name in ("sinf", "llvm.sin.f64", "llvm.maxnum.v4f32", "__exp_finite", "cosl"):
        assert call_effect(name).kind == "math"
        assert rules.libm_rule(name) is not None


def test_two_result_math_intrinsics_have_rules_for_both_results():
    """``llvm.modf``/``llvm.sincos``/``llvm.frexp`` are pure math in the effects table
    exactly when ``rules.STRUCT_MATH`` has their rule pair; ``llvm.sincospi`` has none
    and stays unknown (an error where it touches derivatives), not a one-result libm
    function."""
    from enzyme_py.analysis.effects import STRUCT_MATH_INTRINSICS
    assert set(rules.STRUCT_MATH) == set(STRUCT_MATH_INTRINSICS)
    for name in ("llvm.modf.f64", "llvm.sincos.v2f32", "llvm.frexp.f64.i32"):
        assert call_effect(name).kind == "math" and rules.struct_math_rule(name) is not None
        assert rules.libm_rule(name) is None
    assert call_effect("llvm.sincospi.f64") is None
    assert rules.struct_math_rule("modf") is None   # the libm call stores its second result


@pytest.mark.parametrize("name", known_names())
def test_every_table_entry_is_complete(name):
    eff = call_effect(name)
    assert eff.kind in ("math", "inactive", "writes", "alloc", "free", "memcpy", "memmove",
                        "memset", "nomem", "typehint", "omp",
                        "mirror", "sort")
    assert eff.reason
    if eff.kind == "omp":   # ad/openmp.py has the rule
        from enzyme_py.ad import openmp
        assert openmp.handles(name) and name in openmp.EFFECT_NAMES
    if eff.kind == "writes":
        assert eff.writes
    if eff.kind == "alloc":
        assert eff.size is not None


@pytest.mark.parametrize("name", ["fread", "strcpy", "snprintf", "sprintf", "fgets",
                                  "strtod", "sscanf", "frexp", "modf", "bzero"])
def test_functions_writing_their_arguments_say_so(name):
    assert call_effect(name).writes


@pytest.mark.parametrize("name", ["posix_memalign", "aligned_alloc", "memalign", "malloc",
                                  "calloc", "realloc", "_Znwm"])
def test_allocation_families(name):
    assert call_effect(name).kind == "alloc"


@pytest.mark.parametrize("name", [
    "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEED1Ev",           # libstdc++
    "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4sizeEv",
    "_ZNSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEED1Ev",  # libc++
    "_ZNKSt3__112basic_stringIcNS_11char_traitsIcEENS_9allocatorIcEEE4findEcm"])
def test_std_string_members_of_both_libraries_are_inactive(name):
    # the ziglang clang builds C++ against libc++, Debian's clang against libstdc++;
    # either library instantiates std::string's members out of line
    assert call_effect(name).kind == "inactive"


def test_strings_of_other_characters_are_not_taken_for_std_string():
    assert call_effect("_ZNSt3__112basic_stringIdNS_11char_traitsIdEENS_9allocatorIdEEED1Ev") \
        is None
