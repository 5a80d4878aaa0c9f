"""The top layer of the parser: a module, line by line.

LLVM prints every top-level entity on one line (a definition's body runs to
the next line that is exactly ``}``), so the module is split into lines and
only the lines that need it are tokenized: metadata, attribute groups and
comdats are kept verbatim, function bodies are recorded for lazy parsing.
"""

from __future__ import annotations

import re

from . import types as T
from .lexer import EOF, GLOBAL, KW, LOCAL, META, PUNCT, ParseError
from .module import Function, GlobalAlias, GlobalIFunc, GlobalVariable, Module
from .parser import Parser, _Forward, _unquote

__all__ = ["parse_module"]


# ============================================================================
# module (line-based top level)
# ============================================================================

class _TopParser(Parser):
    """One top-level line (global, declaration or definition header)."""

    def module_forward_global(self, key):
        fwd = self.module._fwd_globals
        f = fwd.get(key)
        if f is None:
            f = fwd[key] = _Forward(T.ptr, key)
        return f


def _define_global(mod: Module, g):
    f = mod._fwd_globals.pop(g.name, None)
    if f is not None:
        f.replace_all_uses_with(g)


_LINE_KINDS = ("source_filename", "target", "attributes", "module", "uselistorder")


def parse_module(text: str, lazy: bool = True) -> Module:
    """Parse a whole module; function bodies are parsed on first access unless ``lazy`` is False."""
    mod = Module()
    mod._fwd_globals = {}
    mod._pending_blockaddrs = []
    lines = text.split("\n")
    offsets = []
    pos = 0
    for ln in lines:
        offsets.append(pos)
        pos += len(ln) + 1
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        if not line or line[0] == ";" or line.isspace():
            if line.startswith("; ModuleID = ") and mod.header_comment is None:
                mod.header_comment = line
            i += 1
            continue
        c = line[0]
        try:
            if c == "!":
                name, _, rest = line.partition(" = ")
                if name[1:].isdigit():
                    mod.metadata[name[1:]] = rest
                else:
                    mod.named_metadata[name[1:]] = rest
            elif c == "@":
                _parse_global_line(mod, text, offsets[i], offsets[i] + len(line), i)
            elif c == "%":
                _parse_type_def(mod, text, offsets[i], offsets[i] + len(line), i)
            elif c == "$":
                mod.comdats.append(line)
            elif line.startswith("define "):
                j = i + 1
                while j < n and lines[j] != "}":
                    j += 1
                if j >= n:
                    raise ParseError("function body is not closed by '}'", text, offsets[i])
                fn = _parse_function_header(mod, text, offsets[i], offsets[i] + len(line), i,
                                            True)
                fn._is_definition = True
                # body: from the '{' at the end of the header line to the closing '}'
                brace = offsets[i] + line.rindex("{")
                fn._lazy_body = (text, brace, offsets[j] + 1, i)
                mod._users_parsed.clear()
                i = j
            elif line.startswith("declare "):
                _parse_function_header(mod, text, offsets[i], offsets[i] + len(line), i, False)
            elif line.startswith("source_filename = "):
                mod.source_filename = _str_value(line)
            elif line.startswith("target datalayout = "):
                mod.datalayout_text = _str_value(line)
            elif line.startswith("target triple = "):
                mod.triple = _str_value(line)
            elif line.startswith("attributes #"):
                num, _, rest = line[len("attributes #"):].partition(" = ")
                mod.attribute_groups[num] = rest
            elif line.startswith("module asm "):
                mod.module_asm.append(line)
            elif line.startswith("uselistorder"):
                pass  # use-list order is not semantic; LLVM verifies without it
            else:
                raise ParseError("expected a top-level entity", text, offsets[i])
        except ParseError:
            raise
        i += 1
    if mod._fwd_globals:
        key = next(iter(mod._fwd_globals))
        raise ParseError(f"use of undefined global @{key}")
    if not lazy:
        mod.materialize_all()
    return mod


def _str_value(line: str) -> str:
    s = line.partition(" = ")[2]
    return s[1:-1]


def _parse_type_def(mod, text, start, end, lineno):
    p = _TopParser(mod, text, start, end)
    name = _unquote(p.toks[0][1:])
    p.i = 1
    p.parse_punct("=")
    p.parse_kw("type")
    t = mod.add_type(name)
    mod.types[name] = mod.types.pop(name)  # print in definition order, not first-use order
    if p.parse_optional_kw("opaque"):
        return
    body = p.parse_type()
    if not body.is_struct:
        raise p.error("expected a struct type body")
    t.set_body(body.elements, body.packed)


_GLOBAL_KWS = {"global", "constant", "alias", "ifunc"}


def _parse_global_line(mod, text, start, end, lineno):
    p = _TopParser(mod, text, start, end)
    name = _unquote(p.toks[0][1:])
    p.i = 1
    p.parse_punct("=")
    s = p.i
    while not (p.kinds[p.i] == KW and p.toks[p.i] in _GLOBAL_KWS):
        if p.kinds[p.i] == EOF:
            raise p.expected("'global', 'constant', 'alias' or 'ifunc'")
        p.skip_balanced()
    prefix = p.slice(s, p.i)
    kind = p.toks[p.i]
    p.i += 1
    m = re.search(r"addrspace\((\d+)\)", prefix)
    asp = int(m.group(1)) if m else 0
    vty = p.parse_type()
    if kind in ("alias", "ifunc"):
        p.parse_punct(",")
        target = p.parse_typed_value()
        tail = text[p.starts[p.i]:end] if p.kinds[p.i] != EOF else ""
        cls = GlobalAlias if kind == "alias" else GlobalIFunc
        g = cls(mod, name, vty, target, prefix, tail, T.PointerType(asp))
        _define_global(mod, g)
        mod._add(g, mod.aliases)
        return
    init = None
    if p.kinds[p.i] != EOF and not (p.kinds[p.i] == PUNCT and p.toks[p.i] == ","):
        init = p.parse_value(vty)
    tail = text[p.starts[p.i]:end] if p.kinds[p.i] != EOF else ""
    if tail and not tail.startswith(","):
        tail = " " + tail
    g = GlobalVariable(mod, name, vty, init, kind == "constant", prefix, tail, asp)
    _define_global(mod, g)
    mod._add(g, mod.global_variables)


def _parse_function_header(mod, text, start, end, lineno, is_define):
    p = _TopParser(mod, text, start, end)
    p.i = 1
    attachments = []
    s = p.i
    pieces = []
    while not p.at_type_start():
        if p.kinds[p.i] == EOF:
            raise p.expected("a return type")
        if p.kinds[p.i] == META:  # declare !dbg !12 void @f(...)
            if p.i > s:
                pieces.append(p.slice(s, p.i))
            kind = p.toks[p.i][1:]
            p.i += 1
            attachments.append((kind, p.toks[p.i]))
            p.i += 1
            s = p.i
            continue
        p.skip_balanced()
    if p.i > s:
        pieces.append(p.slice(s, p.i))
    prefix = " ".join(pieces)
    ret = p.parse_type()
    if p.kinds[p.i] != GLOBAL:
        raise p.expected("a function name")
    name = _unquote(p.toks[p.i][1:])
    p.i += 1
    p.parse_punct("(")
    params, names, attrs, varargs = [], [], [], False
    if not p.parse_optional_punct(")"):
        while True:
            if p.parse_optional_punct("..."):
                varargs = True
            else:
                params.append(p.parse_type())
                attrs.append(p.parse_attr_text())
                if p.kinds[p.i] == LOCAL:
                    nm = _unquote(p.toks[p.i][1:])
                    names.append(None if nm.isdigit() else nm)
                    p.i += 1
                else:
                    names.append(None)
            if not p.parse_optional_punct(","):
                break
        p.parse_punct(")")
    fnty = T.FunctionType(ret, params, varargs)
    asp = 0
    s = p.i
    slots = []
    fa_pieces = []
    while True:
        k, t = p.kinds[p.i], p.toks[p.i]
        if k == EOF or (k == PUNCT and t == "{"):
            break
        if k == KW and t in ("personality", "prefix", "prologue"):
            if p.i > s:
                fa_pieces.append(p.slice(s, p.i))
            p.i += 1
            slots.append((t, p.parse_typed_value()))
            s = p.i
            continue
        if k == META:
            if p.i > s:
                fa_pieces.append(p.slice(s, p.i))
            kind = t[1:]
            p.i += 1
            ms = p.i
            if p.toks[p.i] == "!":
                p.i += 1
            p.skip_balanced()
            attachments.append((kind, p.slice(ms, p.i)))
            s = p.i
            continue
        if k == KW and t == "addrspace":
            p.i += 2
            asp = p.parse_int()
            p.i += 1
            continue
        p.skip_balanced()
    if p.i > s:
        fa_pieces.append(p.slice(s, p.i))
    fn = Function(mod, name, fnty, names, attrs, prefix, " ".join(fa_pieces), asp)
    fn.attachments = attachments
    for kind, v in slots:
        fn._set_slot(kind, v)
    _define_global(mod, fn)
    mod._add(fn, mod.functions)
    return fn
