"""Parser of LLVM textual IR as printed by llvmlite's LLVM.

Layers, bottom up: tokens (:mod:`.lexer`) → literals and types → constants and
values (:class:`Parser`, here) → instructions and blocks (:class:`BodyParser`,
:mod:`.body_parser`) → module (line-based, :func:`parse_module`,
:mod:`.module_parser`).  ``parse_optional_x`` returns None where ``parse_x``
raises a :class:`ParseError` naming what was expected.

Function bodies are parsed lazily: the module parser records each body's text
and :func:`parse_function_body` runs on first access to ``fn.blocks``.
"""

from __future__ import annotations

import re

from . import instructions as I
from . import types as T
from . import values as V
from .lexer import (
    EOF,
    FLOAT,
    GLOBAL,
    INT,
    KW,
    LOCAL,
    PUNCT,
    STR,
    ParseError,
    tokenize,
)
from .module import Module

__all__ = ["parse_module", "parse_function_body", "ParseError", "Parser"]

_FLOAT_KINDS = {"half", "bfloat", "float", "double", "x86_fp80", "fp128", "ppc_fp128"}
_SIMPLE_TYPES = {"void": T.void, "label": T.label, "metadata": T.metadata, "token": T.token,
                 "ptr": T.ptr, **{k: T.FloatType(k) for k in _FLOAT_KINDS}}
_INT_RE = re.compile(r"i[0-9]+\Z")
FMF = {"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast"}
_CONST_KW = {"null", "true", "false", "undef", "poison", "zeroinitializer", "none",
             "blockaddress", "dso_local_equivalent", "no_cfi", "splat", "asm", "ptrauth",
             "getelementptr", "extractelement", "insertelement", "shufflevector", "select",
             "icmp", "fcmp"} | I.CAST_OPS | I.BINARY_OPS
_ORDERINGS = {"unordered", "monotonic", "acquire", "release", "acq_rel", "seq_cst"}


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


class Parser:
    """Token-level parsing: types, constants, typed values, attribute text."""

    def __init__(self, module: Module, text: str, start: int = 0, end: int | None = None,
                 line_offset: int = 0):
        self.module = module
        self.text = text
        self.kinds, self.toks, self.starts, self.ends = tokenize(text, start, end)
        self.i = 0
        self.line_offset = line_offset

    # -- token helpers ------------------------------------------------------------
    def error(self, msg: str, i: int | None = None) -> ParseError:
        i = self.i if i is None else i
        return ParseError(msg, self.text, self.starts[min(i, len(self.starts) - 1)],
                          self.line_offset)

    def expected(self, what: str) -> ParseError:
        tok = self.toks[self.i] or "end of input"
        return self.error(f"expected {what}, found '{tok}'")

    def parse_optional_punct(self, p: str) -> bool:
        if self.kinds[self.i] == PUNCT and self.toks[self.i] == p:
            self.i += 1
            return True
        return False

    def parse_punct(self, p: str) -> None:
        if not self.parse_optional_punct(p):
            raise self.expected(f"'{p}'")

    def parse_optional_kw(self, kw: str) -> bool:
        if self.toks[self.i] == kw and self.kinds[self.i] == KW:
            self.i += 1
            return True
        return False

    def parse_kw(self, kw: str) -> None:
        if not self.parse_optional_kw(kw):
            raise self.expected(f"'{kw}'")

    def parse_int(self) -> int:
        if self.kinds[self.i] != INT:
            raise self.expected("an integer")
        self.i += 1
        return int(self.toks[self.i - 1])

    def skip_balanced(self) -> None:
        """Skip one token, or a whole bracketed group if it opens one."""
        depth = 0
        while True:
            k, t = self.kinds[self.i], self.toks[self.i]
            if k == EOF:
                raise self.expected("a closing bracket")
            self.i += 1
            if k == PUNCT:
                if t in "([{<":
                    depth += 1
                elif t in ")]}>":
                    depth -= 1
            if depth <= 0:
                return

    def slice(self, i: int, j: int) -> str:
        """Source text of tokens ``i..j-1``."""
        if j <= i:
            return ""
        return self.text[self.starts[i]:self.ends[j - 1]]

    # -- types ----------------------------------------------------------------------
    def at_type_start(self) -> bool:
        k, t = self.kinds[self.i], self.toks[self.i]
        if k == KW:
            return t in _SIMPLE_TYPES or _INT_RE.match(t) is not None
        if k == PUNCT:
            return t in "<[{"
        return k == LOCAL

    def parse_optional_type(self) -> T.Type | None:
        if not self.at_type_start():
            return None
        return self.parse_type()

    def parse_type(self) -> T.Type:
        ty = self._parse_base_type()
        while self.kinds[self.i] == PUNCT and self.toks[self.i] == "(":
            ty = self._parse_function_type(ty)
        return ty

    def _parse_function_type(self, ret):
        self.parse_punct("(")
        params, varargs = [], False
        if not self.parse_optional_punct(")"):
            while True:
                if self.parse_optional_punct("..."):
                    varargs = True
                else:
                    params.append(self.parse_type())
                if not self.parse_optional_punct(","):
                    break
            self.parse_punct(")")
        return T.FunctionType(ret, params, varargs)

    def _parse_base_type(self) -> T.Type:
        k, t = self.kinds[self.i], self.toks[self.i]
        if k == KW:
            st = _SIMPLE_TYPES.get(t)
            if st is not None:
                self.i += 1
                if t == "ptr" and self.toks[self.i] == "addrspace":
                    self.i += 2
                    n = self.parse_int()
                    self.parse_punct(")")
                    return T.PointerType(n)
                return st
            if _INT_RE.match(t):
                self.i += 1
                return T.IntType(int(t[1:]))
            raise self.expected("a type")
        if k == LOCAL:
            self.i += 1
            return self.module.add_type(_unquote(t[1:]))
        if k == PUNCT:
            if t == "[":
                self.i += 1
                n = self.parse_int()
                self.parse_kw("x")
                el = self.parse_type()
                self.parse_punct("]")
                return T.ArrayType(el, n)
            if t == "{":
                self.i += 1
                return T.StructType(self._parse_type_list("}"), False)
            if t == "<":
                self.i += 1
                if self.parse_optional_punct("{"):
                    els = self._parse_type_list("}")
                    self.parse_punct(">")
                    return T.StructType(els, True)
                scalable = self.parse_optional_kw("vscale")
                if scalable:
                    self.parse_kw("x")
                n = self.parse_int()
                self.parse_kw("x")
                el = self.parse_type()
                self.parse_punct(">")
                return T.VectorType(el, n, scalable)
        raise self.expected("a type")

    def _parse_type_list(self, close):
        els = []
        if self.parse_optional_punct(close):
            return els
        while True:
            els.append(self.parse_type())
            if not self.parse_optional_punct(","):
                break
        self.parse_punct(close)
        return els

    # -- values ---------------------------------------------------------------------
    def lookup_local(self, name: str, ty: T.Type) -> V.Value:
        raise self.error("function-local value outside a function")

    def lookup_global(self, name: str) -> V.Value:
        key = _unquote(name[1:])
        g = self.module.symbols.get(key)
        if g is None:
            g = self.module_forward_global(key)
        return g

    def module_forward_global(self, key):
        raise self.error(f"use of undefined global @{key}")

    def parse_typed_value(self) -> V.Value:
        ty = self.parse_type()
        return self.parse_value(ty)

    def parse_value(self, ty: T.Type) -> V.Value:
        k, t = self.kinds[self.i], self.toks[self.i]
        if k == LOCAL:
            self.i += 1
            return self.lookup_local(t, ty)
        if ty is T.metadata:
            return self.parse_metadata_value()
        if k == GLOBAL:
            self.i += 1
            return self.lookup_global(t)
        if k == INT:
            self.i += 1
            if ty.is_float:
                return V.ConstantFP(ty, text=t)
            return V.ConstantInt(ty, int(t))
        if k == FLOAT:
            self.i += 1
            return V.ConstantFP(ty, text=t)
        if k == KW:
            return self._parse_kw_constant(ty)
        if k == STR and t.startswith("c"):
            self.i += 1
            return V.ConstantString(ty, t[1:])
        if k == PUNCT:
            if t == "{":
                self.i += 1
                return V.ConstantAggregate(ty, self._parse_typed_list("}"))
            if t == "[":
                self.i += 1
                return V.ConstantAggregate(ty, self._parse_typed_list("]"))
            if t == "<":
                self.i += 1
                if self.parse_optional_punct("{"):
                    els = self._parse_typed_list("}")
                    self.parse_punct(">")
                    return V.ConstantAggregate(ty, els)
                return V.ConstantAggregate(ty, self._parse_typed_list(">"))
        raise self.expected(f"a value of type {ty}")

    def _parse_typed_list(self, close):
        els = []
        if self.parse_optional_punct(close):
            return els
        while True:
            els.append(self.parse_typed_value())
            if not self.parse_optional_punct(","):
                break
        self.parse_punct(close)
        return els

    def _parse_kw_constant(self, ty):
        t = self.toks[self.i]
        self.i += 1
        if t == "true" or t == "false":
            return V.ConstantInt(ty, 1 if t == "true" else 0)
        if t == "null":
            return V.ConstantNull(ty)
        if t == "none":
            return V.ConstantTokenNone(ty)
        if t == "undef":
            return V.Undef(ty)
        if t == "poison":
            return V.Poison(ty)
        if t == "zeroinitializer":
            return V.ZeroInit(ty)
        if t == "splat":
            self.parse_punct("(")
            v = self.parse_typed_value()
            self.parse_punct(")")
            return V.ConstantSplat(ty, [v])
        if t == "blockaddress":
            self.parse_punct("(")
            fn = self.parse_value(T.ptr)
            self.parse_punct(",")
            bb = self.toks[self.i]
            self.i += 1
            self.parse_punct(")")
            return V.BlockAddress(ty, [fn, self.block_address_target(fn, bb)])
        if t in ("dso_local_equivalent", "no_cfi"):
            return V.GlobalRefConstant(ty, t, self.parse_value(T.ptr))
        if t == "asm":
            start = self.i - 1
            while self.kinds[self.i] == KW:
                self.i += 1
            if self.kinds[self.i] != STR:
                raise self.expected("an asm string")
            self.i += 1
            self.parse_punct(",")
            if self.kinds[self.i] != STR:
                raise self.expected("an asm constraint string")
            self.i += 1
            return V.InlineAsm(ty, self.slice(start, self.i))
        if t in _CONST_KW:
            return self._parse_constant_expr(t, ty)
        self.i -= 1
        raise self.expected(f"a value of type {ty}")

    def block_address_target(self, fn, bbtok):
        placeholder = _Forward(T.label, _unquote(bbtok[1:]))
        self.module._pending_blockaddrs.append((fn, placeholder))
        return placeholder

    def _parse_constant_expr(self, op, ty):
        fstart = self.i
        while self.kinds[self.i] == KW and self.toks[self.i] in (
                "inbounds", "nuw", "nsw", "nusw", "exact", "disjoint", "inrange", "samesign"):
            if self.toks[self.i] == "inrange":
                self.i += 1
                self.skip_balanced()
            else:
                self.i += 1
        flags = self.slice(fstart, self.i)
        pred = None
        if op in ("icmp", "fcmp"):
            pred = self.toks[self.i]
            self.i += 1
            flags = (flags + " " + pred).strip()
        self.parse_punct("(")
        src_ty = None
        if op == "getelementptr":
            src_ty = self.parse_type()
            self.parse_punct(",")
        ops = [self.parse_typed_value()]
        dest = None
        if op in I.CAST_OPS:
            self.parse_kw("to")
            dest = self.parse_type()
        else:
            while self.parse_optional_punct(","):
                ops.append(self.parse_typed_value())
        self.parse_punct(")")
        return V.ConstantExpr(ty, op, ops, flags, src_ty, dest)

    def parse_metadata_value(self) -> V.MetadataValue:
        """A ``metadata`` operand, kept as text with operand holes."""
        parts, ops = self.parse_template(stop_at_comma=True)
        return V.MetadataValue(parts, ops)

    def parse_template(self, stop_at_comma: bool):
        """Text up to a depth-0 ``,``/``)`` (or the matching ``)``) with value holes."""
        parts, ops = [], []
        depth = 0
        last = self.starts[self.i]
        first = self.i
        while True:
            k, t = self.kinds[self.i], self.toks[self.i]
            if k == EOF:
                raise self.expected("end of metadata operand")
            if k == PUNCT:
                if t in "([{<":
                    depth += 1
                elif t in ")]}>":
                    if depth == 0:
                        break
                    depth -= 1
                elif t == "," and depth == 0 and stop_at_comma:
                    break
            elif k == LOCAL or k == GLOBAL:
                s = self.starts[self.i]
                if s > last:
                    parts.append(self.text[last:s])
                prev = self.toks[self.i - 1] if self.i > first else ""
                if k == LOCAL:
                    v = (self.lookup_block(t) if prev == "label"
                         else self.lookup_local(t, T.void))
                else:
                    v = self.lookup_global(t)
                parts.append(len(ops))
                ops.append(v)
                last = self.ends[self.i]
            self.i += 1
        end = self.ends[self.i - 1] if self.i > first else last
        if end > last:
            parts.append(self.text[last:end])
        return parts, ops

    def lookup_block(self, tok):
        raise self.error("block reference outside a function")

    # -- attribute text ----------------------------------------------------------
    def parse_attr_text(self, stop_kws=()) -> str:
        """Parameter/return attributes before a value: ``noundef nonnull align 8 ...``."""
        start = self.i
        while True:
            k, t = self.kinds[self.i], self.toks[self.i]
            if k == KW:
                if t in _CONST_KW or t in stop_kws:
                    break
                if t == "align" and self.kinds[self.i + 1] == INT:
                    self.i += 2
                    continue
                self.i += 1
                if self.toks[self.i] == "(" and self.kinds[self.i] == PUNCT:
                    self.skip_balanced()
            elif k == STR and not t.startswith("c"):
                self.i += 1
                if self.toks[self.i] == "=":
                    self.i += 2
            else:
                break
        return self.slice(start, self.i)


class _Forward(V.Value):
    """Placeholder for a value used before its definition."""

    __slots__ = ("key",)

    def __init__(self, ty, key):
        super().__init__(ty, None)
        self.key = key


from .body_parser import parse_function_body  # noqa: E402  (the layer above)
from .module_parser import parse_module  # noqa: E402  (the top layer)
