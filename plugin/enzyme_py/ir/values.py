"""Values, uses and constants.

Every operand slot of a :class:`User` is a :class:`Use` linked into the used
value's use list, so :meth:`Value.replace_all_uses_with` costs the number of
uses.  Use lists are insertion-ordered dicts (O(1) unlink); ``value.uses``
returns them as a list.

Constants are not uniqued: the parser makes one object per occurrence, so a
constant's use list is short.  Compare constants with :func:`same_constant`.
Textual parts that LLVM keeps as metadata or that we keep verbatim are
:class:`TemplateUser` objects: literal text with *holes* that are real
operands, so renaming and RAUW keep the text right.
"""

from __future__ import annotations

import math
import re
import struct

from . import types as T

__all__ = [
    "Value", "Use", "User", "Argument", "Constant", "ConstantInt", "ConstantFP",
    "ConstantNull", "ConstantTokenNone", "Undef", "Poison", "ZeroInit",
    "ConstantAggregate", "ConstantString", "ConstantSplat", "ConstantExpr",
    "BlockAddress", "GlobalRefConstant", "InlineAsm", "TemplateUser",
    "MetadataValue", "DebugRecord", "IRError", "const_int", "const_fp",
    "same_constant", "fp_text",
]


class IRError(Exception):
    """Misuse of the IR API (erasing a value with uses, bad operand, ...)."""


class Use:
    """One operand slot: ``user.operands[index] is value``."""

    __slots__ = ("value", "user", "index")

    def __init__(self, value: Value, user: User, index: int):
        self.value, self.user, self.index = value, user, index

    def __repr__(self):
        return f"<Use {self.index} of {type(self.user).__name__}>"


class Value:
    __slots__ = ("type", "name", "_uses", "__weakref__")
    is_constant = False
    is_global = False
    is_instruction = False
    is_block = False
    is_argument = False
    is_debug_use = False  # users that are debug records do not keep values alive

    def __init__(self, type: T.Type, name: str | None = None):
        self.type = type
        self.name = name
        self._uses: dict[Use, None] = {}

    @property
    def uses(self) -> list[Use]:
        return list(self._uses)

    @property
    def users(self) -> list[User]:
        return [u.user for u in self.uses]

    @property
    def num_uses(self) -> int:
        return len(self.uses)

    def has_uses(self) -> bool:
        return bool(self.uses)

    def replace_all_uses_with(self, new: Value) -> None:
        if new is self:
            return
        for use in self.uses:
            use.user.set_operand(use.index, new)

    def __str__(self) -> str:
        from .printer import Printer
        return Printer().value_str(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name or ''}: {self.type}>"


class User(Value):
    """A value with operands (instructions, constant aggregates/expressions, templates)."""

    __slots__ = ("_ops",)

    def __init__(self, type: T.Type, operands=(), name: str | None = None):
        super().__init__(type, name)
        self._ops: list[Use] = []
        for v in operands:
            self.append_operand(v)

    # operand access
    @property
    def operands(self) -> list[Value]:
        return [u.value for u in self._ops]

    @property
    def operand_uses(self) -> list[Use]:
        return list(self._ops)

    @property
    def num_operands(self) -> int:
        return len(self._ops)

    def operand(self, i: int) -> Value:
        return self._ops[i].value

    def set_operand(self, i: int, v: Value) -> None:
        use = self._ops[i]
        del use.value._uses[use]
        use.value = v
        v._uses[use] = None

    def append_operand(self, v: Value) -> Use:
        if not isinstance(v, Value):
            raise IRError(f"operand must be a Value, got {v!r}")
        use = Use(v, self, len(self._ops))
        self._ops.append(use)
        v._uses[use] = None
        return use

    def insert_operand(self, i: int, v: Value) -> None:
        use = Use(v, self, i)
        self._ops.insert(i, use)
        v._uses[use] = None
        for j in range(i + 1, len(self._ops)):
            self._ops[j].index = j

    def remove_operand(self, i: int) -> Value:
        use = self._ops.pop(i)
        del use.value._uses[use]
        for j in range(i, len(self._ops)):
            self._ops[j].index = j
        return use.value

    def drop_all_references(self) -> None:
        for use in self._ops:
            use.value._uses.pop(use, None)
        self._ops = []


class Argument(Value):
    __slots__ = ("parent", "index", "attrs")
    is_argument = True

    def __init__(self, type, name=None, parent=None, index=0, attrs: str = ""):
        super().__init__(type, name)
        self.parent, self.index, self.attrs = parent, index, attrs


# ----------------------------------------------------------------------------
# constants
# ----------------------------------------------------------------------------

class Constant(User):
    __slots__ = ()
    is_constant = True

    def clone(self, vmap=None):
        """A fresh copy (constants are not uniqued); operands mapped through vmap."""
        return self


class ConstantInt(Constant):
    __slots__ = ("value",)

    def __init__(self, type, value: int):
        super().__init__(type)
        self.value = value

    def clone(self, vmap=None):
        return ConstantInt(self.type, self.value)


def fp_text(ty: T.Type, v: float) -> str:
    """Spell a float constant as LLVM's AsmWriter does (decimal if exact, else hex)."""
    kind = ty.kind
    if kind in ("double", "float"):
        if kind == "float" and math.isfinite(v):
            # LLVM spells a float constant as the double it widens to, and
            # rejects one that a float cannot hold exactly: round first.
            v = struct.unpack("<f", struct.pack("<f", v))[0]
        if math.isfinite(v):
            s = f"{v:.6e}"
            if float(s) == v:  # the decimal must denote exactly this double
                return s
        return "0x{:016X}".format(struct.unpack("<Q", struct.pack("<d", v))[0])
    if kind == "half":
        return "0xH{:04X}".format(struct.unpack("<H", struct.pack("<e", v))[0])
    if kind == "bfloat":
        return "0xR%04X" % (struct.unpack("<I", struct.pack("<f", v))[0] >> 16)
    if kind == "x86_fp80":
        return _x87_text(v)
    raise IRError(f"cannot spell a {kind} constant from a Python float")


def _x87_text(v: float) -> str:
    if v == 0:
        return "0xK8000" + "0" * 16 if math.copysign(1, v) < 0 else "0xK" + "0" * 20
    if not math.isfinite(v):
        raise IRError("non-finite x86_fp80 constants are not supported")
    bits = struct.unpack("<Q", struct.pack("<d", v))[0]
    sign = bits >> 63
    exp = (bits >> 52) & 0x7FF
    frac = bits & ((1 << 52) - 1)
    if exp == 0:
        m, e = math.frexp(abs(v))
        return _x87_from(sign, e - 1 + 16383, int(m * 2 ** 64))
    return _x87_from(sign, exp - 1023 + 16383, (1 << 63) | (frac << 11))


def _x87_from(sign, exp, mant):
    return f"0xK{(sign << 15) | exp:04X}{mant:016X}"


def _parse_fp_text(kind: str, text: str) -> float | None:
    """The Python float a parsed FP token denotes, when it is a double/float."""
    try:
        if text.startswith("0x") and len(text) == 18:
            return struct.unpack("<d", struct.pack("<Q", int(text[2:], 16)))[0]
        if text.startswith(("0xH",)):
            return struct.unpack("<e", struct.pack("<H", int(text[3:], 16)))[0]
        if text.startswith("0x"):
            return None
        return float(text)
    except (ValueError, struct.error):
        return None


class ConstantFP(Constant):
    """A float constant; ``text`` is the exact token (kept from the input)."""

    __slots__ = ("text", "_value")

    def __init__(self, type, value: float | None = None, text: str | None = None):
        super().__init__(type)
        if text is None:
            text = fp_text(type, value)
        self.text = text
        self._value = value

    @property
    def value(self) -> float | None:
        if self._value is None:
            self._value = _parse_fp_text(self.type.kind, self.text)
        return self._value

    def clone(self, vmap=None):
        return ConstantFP(self.type, self._value, self.text)


class _Keyword(Constant):
    __slots__ = ()
    keyword = ""

    def __init__(self, type):
        super().__init__(type)

    def clone(self, vmap=None):
        return type(self)(self.type)


class ConstantNull(_Keyword):
    __slots__ = ()
    keyword = "null"


class ConstantTokenNone(_Keyword):
    __slots__ = ()
    keyword = "none"

    def __init__(self, type=T.token):
        super().__init__(type)


class Undef(_Keyword):
    __slots__ = ()
    keyword = "undef"


class Poison(_Keyword):
    __slots__ = ()
    keyword = "poison"


class ZeroInit(_Keyword):
    __slots__ = ()
    keyword = "zeroinitializer"


class ConstantAggregate(Constant):
    """``{ T a, ... }``, ``<{ ... }>``, ``[ T a, ... ]`` or ``< T a, ... >``.

    The elements are operands."""

    __slots__ = ()

    def clone(self, vmap=None):
        return ConstantAggregate(self.type, [_clone_const(v, vmap) for v in self.operands])


class ConstantString(Constant):
    """``c"..."`` array data; ``text`` is the quoted body with escapes."""

    __slots__ = ("text",)

    def __init__(self, type, text: str):
        super().__init__(type)
        self.text = text

    def clone(self, vmap=None):
        return ConstantString(self.type, self.text)


class ConstantSplat(Constant):
    """``splat (T v)``: a vector with every lane equal to the operand."""

    __slots__ = ()

    def clone(self, vmap=None):
        return ConstantSplat(self.type, [_clone_const(self.operand(0), vmap)])


class ConstantExpr(Constant):
    """A constant expression: ``opcode flags (T a, T b ...)``.

    ``source_type`` is the GEP source element type, ``dest_type`` the target of a
    cast; ``flags`` holds ``inbounds``/``nuw``/``inrange(-16, 8)`` etc. as text.
    """

    __slots__ = ("opcode", "flags", "source_type", "dest_type")

    def __init__(self, type, opcode, operands, flags="", source_type=None, dest_type=None):
        super().__init__(type, operands)
        self.opcode, self.flags = opcode, flags
        self.source_type, self.dest_type = source_type, dest_type

    def clone(self, vmap=None):
        return ConstantExpr(self.type, self.opcode, [_clone_const(v, vmap) for v in self.operands],
                            self.flags, self.source_type, self.dest_type)


class BlockAddress(Constant):
    """``blockaddress(@f, %bb)``: operands are the function and the block."""

    __slots__ = ()

    def clone(self, vmap=None):
        return BlockAddress(self.type, [_map(v, vmap) for v in self.operands])


class GlobalRefConstant(Constant):
    """``dso_local_equivalent @f`` / ``no_cfi @f``."""

    __slots__ = ("keyword",)

    def __init__(self, type, keyword, target):
        super().__init__(type, [target])
        self.keyword = keyword

    def clone(self, vmap=None):
        return GlobalRefConstant(self.type, self.keyword, _map(self.operand(0), vmap))


class InlineAsm(Value):
    """An inline asm callee; ``text`` is ``asm [sideeffect] "code", "constraints"``."""

    __slots__ = ("text",)

    _STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')

    def __init__(self, type, text):
        super().__init__(type)
        self.text = text

    @property
    def keywords(self) -> str:
        """What precedes the strings: ``asm sideeffect inteldialect``."""
        return self.text.split('"', 1)[0]

    @property
    def code(self) -> str:
        """The assembly (``maxpd $1, $0``), escapes as the IR writes them."""
        strings = self._STRING.findall(self.text)
        return strings[0] if strings else ""

    @property
    def constraints(self) -> list[str]:
        """The constraint list (``=x``, ``x``, ``0``, ``~{memory}``)."""
        strings = self._STRING.findall(self.text)
        return strings[1].split(",") if len(strings) > 1 and strings[1] else []


def _map(v, vmap):
    if vmap is None:
        return v
    return vmap.get(v, v)


def _clone_const(v, vmap):
    if vmap is not None and v in vmap:
        return vmap[v]
    if isinstance(v, Constant) and not v.is_global:
        return v.clone(vmap)
    return v


# ----------------------------------------------------------------------------
# text with operand holes
# ----------------------------------------------------------------------------

class TemplateUser(User):
    """Literal text with holes; ``parts`` mixes ``str`` and operand indices (``int``)."""

    __slots__ = ("parts",)
    is_debug_use = False

    def __init__(self, type, parts, operands):
        super().__init__(type, operands)
        self.parts = list(parts)

    def render(self, ref) -> str:
        return "".join(p if type(p) is str else ref(self._ops[p].value) for p in self.parts)

    def _clone_args(self, vmap):
        return self.parts, [_map(v, vmap) for v in self.operands]


class MetadataValue(TemplateUser):
    """A ``metadata ...`` operand (``!5``, ``!"str"``, ``ptr %x``, ``!DIArgList(...)``)."""

    __slots__ = ()

    def __init__(self, parts, operands=()):
        super().__init__(T.metadata, parts, operands)

    def clone(self, vmap=None):
        return MetadataValue(*self._clone_args(vmap))


class DebugRecord(TemplateUser):
    """``#dbg_value(...)`` and friends, attached to the instruction they precede."""

    __slots__ = ("kind", "owner")
    is_debug_use = True

    def __init__(self, kind, parts, operands=()):
        super().__init__(T.void, parts, operands)
        self.kind = kind  # "value", "declare", "assign", "label"
        self.owner = None

    def clone(self, vmap=None):
        return DebugRecord(self.kind, *self._clone_args(vmap))


def const_int(ty: T.Type, value: int) -> ConstantInt:
    return ConstantInt(ty, value)


def const_fp(ty: T.Type, value: float) -> ConstantFP:
    return ConstantFP(ty, float(value))


def same_constant(a: Value, b: Value) -> bool:
    """Structural equality of constants (objects are not uniqued)."""
    if a is b:
        return True
    if type(a) is not type(b) or a.type != b.type or not isinstance(a, Constant) or a.is_global:
        return False
    if isinstance(a, ConstantInt):
        return a.value == b.value
    if isinstance(a, ConstantFP):
        return a.text == b.text or (a.value is not None and a.value == b.value
                                    and math.copysign(1, a.value) == math.copysign(1, b.value))
    if isinstance(a, ConstantString):
        return a.text == b.text
    if isinstance(a, ConstantExpr) and (a.opcode, a.flags, a.source_type, a.dest_type) != (
            b.opcode, b.flags, b.source_type, b.dest_type):
        return False
    if isinstance(a, GlobalRefConstant) and a.keyword != b.keyword:
        return False
    return len(a._ops) == len(b._ops) and all(
        same_constant(x.value, y.value) for x, y in zip(a._ops, b._ops))
