"""What the program tells the AD pass through globals and attributes:

- custom derivatives ``__enzyme_register_gradient_NAME[3] = {f, aug, rev}``,
  ``__enzyme_register_derivative_NAME[2] = {f, fwd}``,
  ``__enzyme_register_splitderivative_NAME[3] = {f, aug, fwd}``: the rule is for ``f``,
  the first element, whatever ``NAME`` is (as in Enzyme, the suffix only makes the
  global's name unique);
- ``__enzyme_function_like[2] = {f, "log1p"}``: ``f`` has libm ``log1p``'s derivative;
- inactive functions: ``__enzyme_inactivefn[] = {f, ...}`` and
  ``__attribute__((annotate("enzyme_inactive")))`` (clang records it in
  ``@llvm.global.annotations``; ``"enzyme_const"`` works the same way);
- inactive globals: ``__enzyme_inactive_global[] = {&g, ...}`` and the same annotations
  on a global variable.

``Registry.read(module)`` reads them once, before any optimisation, and checks their shape
(a rule array of the wrong length is a compile error naming the global).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.values import ConstantAggregate, ConstantExpr, ConstantString
from .errors import ADError
from .rules import libm_rule

__all__ = ["Registry", "CustomRule", "MARKERS"]

_RULES = {  # prefix -> (kind, expected length, what each slot is)
    "__enzyme_register_gradient_": ("gradient", 3, "{primal, augmented forward, reverse}"),
    "__enzyme_register_derivative_": ("derivative", 2, "{primal, forward derivative}"),
    "__enzyme_register_splitderivative_": ("splitderivative", 3,
                                           "{primal, augmented forward, forward split}"),
}
_INACTIVE_ANNOTATIONS = ("enzyme_inactive", "enzyme_const", "enzyme_inactivefn")
# Bytes found in a unit's bitcode (its symbol names) when it may register something
MARKERS = (b"__enzyme_register_", b"__enzyme_function_like", b"__enzyme_inactivefn",
           b"llvm.global.annotations")


def _strip(v):
    while isinstance(v, ConstantExpr) and v.opcode in ("bitcast", "addrspacecast"):
        v = v.operand(0)
    return v


def _string_of(v):
    v = _strip(v)
    if getattr(v, "is_global", False) and not getattr(v, "is_function", False):
        init = v.initializer
        if isinstance(init, ConstantString):
            t = init.text
            if t.startswith('c"'):
                t = t[1:]
            t = t.strip('"')
            return t[:-3] if t.endswith("\\00") else t
    return None


@dataclass
class CustomRule:
    kind: str          # "gradient" / "derivative" / "splitderivative"
    name: str          # the function the rule is for
    fns: list          # names of the functions in the array (primal first)
    where: str         # the global's name, for messages


@dataclass
class Registry:
    gradients: dict = field(default_factory=dict)       # name -> CustomRule
    derivatives: dict = field(default_factory=dict)
    splitderivatives: dict = field(default_factory=dict)
    function_like: dict = field(default_factory=dict)   # name -> libm base name
    inactive_fns: set = field(default_factory=set)      # names
    inactive_globals: set = field(default_factory=set)  # names
    rule_fns: set = field(default_factory=set)          # names of the rules' functions

    @classmethod
    def read(cls, module) -> Registry:
        r = cls()
        for g in list(module.global_variables):
            name = g.name
            if name.startswith("__enzyme_"):
                r._read_one(g)
            elif name == "llvm.global.annotations":
                r._read_annotations(g)
        return r

    def _elements(self, g):
        init = g.initializer
        if init is None:
            raise ADError(f"'{g.name}' is declared but not defined here",
                          location=f"global '{g.name}'",
                          hint="define the array in a file compiled with enzyme-cc")
        if isinstance(init, ConstantAggregate):
            return [_strip(v) for v in init.operands]
        if init.is_constant and not init.is_global and hasattr(init, "operands") \
                and not init.operands:   # zeroinitializer
            return []
        return [_strip(init)]

    def _read_one(self, g):
        name = g.name
        for prefix, (kind, n, shape) in _RULES.items():
            if name.startswith(prefix):
                els = self._elements(g)
                if len(els) != n or not all(getattr(v, "is_function", False) for v in els):
                    raise ADError(f"'{name}' must be an array of {n} functions {shape}; it has "
                                  f"{len(els)} element(s)", location=f"global '{name}'",
                                  hint=f"void *{name}[{n}] = {shape};")
                # as in Enzyme, the rule is for the first element; the global's suffix
                # only makes its name unique
                fn_name = els[0].name
                table = {"gradient": self.gradients, "derivative": self.derivatives,
                         "splitderivative": self.splitderivatives}[kind]
                old = table.get(fn_name)
                if old is not None and old.fns != [v.name for v in els]:
                    raise ADError(f"two {kind} rules for '{fn_name}': '{old.where}' and "
                                  f"'{name}'", location=f"global '{name}'",
                                  hint="register one rule per function")
                table[fn_name] = CustomRule(kind, fn_name, [v.name for v in els], name)
                self.rule_fns.update(v.name for v in els[1:])
                return
        if name.startswith("__enzyme_function_like"):
            els = self._elements(g)
            if len(els) != 2 or not getattr(els[0], "is_function", False) \
                    or _string_of(els[1]) is None:
                raise ADError(f"'{name}' must be {{(void*)f, (void*)\"libm name\"}}; it has "
                              f"{len(els)} element(s)", location=f"global '{name}'")
            like = _string_of(els[1])
            if libm_rule(like) is None:
                raise ADError(f"'{name}': '{like}' is not a function EnzymePy knows a "
                              "derivative for", location=f"global '{name}'",
                              hint="use a libm name such as exp, log1p, sin, pow")
            self.function_like[els[0].name] = like
        elif name.startswith("__enzyme_inactivefn"):
            for v in self._elements(g):
                if not getattr(v, "is_function", False):
                    raise ADError(f"'{name}' must list functions", location=f"global '{name}'")
                self.inactive_fns.add(v.name)
        elif name.startswith("__enzyme_inactive_global"):
            for v in self._elements(g):
                if getattr(v, "is_global", False):
                    self.inactive_globals.add(v.name)

    def _read_annotations(self, g):
        init = g.initializer
        if not isinstance(init, ConstantAggregate):
            return
        for entry in init.operands:
            ops = getattr(entry, "operands", [])
            if len(ops) < 2:
                continue
            target, text = _strip(ops[0]), _string_of(ops[1])
            if text not in _INACTIVE_ANNOTATIONS:
                continue
            if getattr(target, "is_function", False):
                self.inactive_fns.add(target.name)
            elif getattr(target, "is_global", False):
                self.inactive_globals.add(target.name)

    # -- queries ---------------------------------------------------------------
    def out_of_line(self) -> set:
        """The functions whose calls the AD pass must find as calls: those with a rule,
        ``function_like`` or inactive.  Inlined into a caller by clang's optimisation,
        their bodies would be differentiated instead (a clamp marked inactive would
        pass its derivative on)."""
        return (set(self.gradients) | set(self.derivatives) | set(self.splitderivatives)
                | set(self.function_like) | self.inactive_fns)

    def has_rule(self, name) -> bool:
        """``name``'s derivative comes from a rule: registered, or ``function_like``."""
        return name in self.gradients or name in self.derivatives or name in self.function_like

    def special(self, name) -> bool:
        """Calls to ``name`` are not differentiated through its body."""
        return (name in self.gradients or name in self.derivatives
                or name in self.function_like or name in self.inactive_fns)

    def libm_for(self, name):
        like = self.function_like.get(name)
        return libm_rule(like) if like is not None else None
