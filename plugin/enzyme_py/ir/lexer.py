"""Tokens of LLVM textual IR (the bottom layer of the parser)."""

from __future__ import annotations

import re

__all__ = ["ParseError", "tokenize", "LOCAL", "GLOBAL", "LABEL", "META", "ATTRGRP", "DBG",
           "STR", "FLOAT", "INT", "KW", "PUNCT", "COMDAT", "EOF"]

LOCAL, GLOBAL, LABEL, META, ATTRGRP, DBG, STR, FLOAT, INT, KW, PUNCT, COMDAT, EOF = (
    "local", "global", "label", "meta", "attrgrp", "dbg", "str", "float", "int", "kw", "p",
    "comdat", "eof")

_NAME = r'(?:[-a-zA-Z$._0-9]+|"[^"]*")'
_TOKEN = re.compile("|".join([
    r"(?P<ws>[ \t\r\n]+|;[^\n]*)",
    r"(?P<label>^(?:[-a-zA-Z$._0-9]+|\"[^\"]*\"):)",
    rf"(?P<local>%{_NAME})",
    rf"(?P<global>@{_NAME})",
    rf"(?P<comdat>\${_NAME})",
    r'(?P<meta>!(?:[-a-zA-Z$._0-9\\]+|"[^"]*"))',
    r"(?P<dbg>#dbg_[a-z_]+)",
    r"(?P<attrgrp>#[0-9]+)",
    r'(?P<str>c?"[^"]*")',
    r"(?P<float>[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|0x[KLMHR][0-9A-Fa-f]+|0x[0-9A-Fa-f]+"
    r"|[-+]?(?:inf|nan)\b)",
    r"(?P<int>[-+]?[0-9]+)",
    r"(?P<kw>[a-zA-Z_][a-zA-Z0-9_.]*)",
    r"(?P<p>\.\.\.|[=,()\[\]{}<>*!:|])",
    r"(?P<err>.)",
]), re.M)


class ParseError(Exception):
    """A syntax error with the offending line and a caret under the column."""

    def __init__(self, message: str, text: str = "", pos: int = 0, line_offset: int = 0,
                 what: str = "IR"):
        self.message = message
        if text:
            line_start = text.rfind("\n", 0, pos) + 1
            line_end = text.find("\n", pos)
            if line_end < 0:
                line_end = len(text)
            self.line = text.count("\n", 0, pos) + 1 + line_offset
            self.column = pos - line_start + 1
            src = text[line_start:line_end]
            full = (f"{what}:{self.line}:{self.column}: error: {message}\n{src}\n"
                    + " " * (self.column - 1) + "^")
        else:
            self.line = self.column = 0
            full = f"{what}: error: {message}"
        super().__init__(full)


def tokenize(text: str, start: int = 0, end: int | None = None):
    """Lists ``(kinds, texts, starts, ends)`` of the tokens in ``text[start:end]``."""
    kinds, texts, starts, ends = [], [], [], []
    ka, ta, sa, ea = kinds.append, texts.append, starts.append, ends.append
    for m in _TOKEN.finditer(text, start, len(text) if end is None else end):
        k = m.lastgroup
        if k == "ws":
            continue
        if k == "err":
            raise ParseError(f"unexpected character {m.group()!r}", text, m.start())
        ka(k)
        ta(m.group())
        sa(m.start())
        ea(m.end())
    ka(EOF)
    ta("")
    p = len(text) if end is None else end
    sa(p)
    ea(p)
    return kinds, texts, starts, ends
