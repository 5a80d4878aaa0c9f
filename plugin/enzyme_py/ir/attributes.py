"""LLVM attribute lists as small immutable values: the one place that reads and edits
attribute text.

The IR model keeps attributes as the text LLVM printed: ``Function.fn_attrs`` (what
follows ``)`` in a header: ``local_unnamed_addr #0 comdat``), ``Argument.attrs`` and a
call's ``arg_attrs``/``ret_attrs`` (``noalias noundef readonly align 8
dereferenceable(16)``), ``Call.fn_attrs`` (``#3``, or words), and
``Module.attribute_groups`` (``"0" -> "{ nounwind "target-cpu"="x86-64" }"``).
:meth:`Attributes.parse` turns such text into a tuple of :class:`Token` and ``str()``
prints it back (tokens joined by one space, each token's own text verbatim).

Tokens (``Token.kind``):

``word``    a bare keyword (``nounwind``, ``local_unnamed_addr``, ``comdat``), one with a
            parenthesised argument (``memory(argmem: read, inaccessiblemem: write)``,
            ``allocsize(0,1)``, ``initializes((0, 8))``, ``byval(%"struct.S")``,
            ``comdat($f)``), ``align 8``, or the groups' ``align=8``/``alignstack=16``;
            ``arg`` is the text inside the parentheses or the integer, else None.
``string``  ``"key"`` or ``"key"="value"``: ``name`` is the key, ``arg`` the value.
            What is inside quotes never counts as a word or a group.
``group``   an attribute-group reference ``#3``: ``name`` is ``"3"``.
``other``   anything else, kept verbatim and in place: ``section "..."``, ``partition
            "..."``, ``gc "..."``, ``personality ptr @f`` / ``prefix``/``prologue`` with
            their typed constant (``name`` the keyword, ``arg`` the string or the
            constant), ``!dbg``, ``!12`` (``name`` empty).  Queries do not see them.

A group's text ``{ ... }`` parses to an ``Attributes`` with ``braced`` set.  Parsing is
cached by text (the values are immutable, so they are shared).

Module-level helpers resolve group references (:func:`resolved`), register a group
(:func:`add_group`, sharing identical ones) and rewrite a list together with the
groups it refers to (:func:`stripped`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

__all__ = ["Token", "Attributes", "resolved", "add_group", "stripped", "named_type"]


class Token(NamedTuple):
    kind: str               # "word", "string", "group" or "other"
    name: str               # the keyword, the string key, the group number; other: ""
    arg: str | None         # see the module docstring
    text: str               # verbatim

    def __str__(self) -> str:
        return self.text


_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT = _IDENT_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
# keywords whose operand is a quoted string that is no string attribute
_WITH_STRING = ("section", "partition", "gc")
# keywords followed by a typed constant (function headers)
_WITH_CONSTANT = ("personality", "prefix", "prologue")
_CONSTANT_WORDS = frozenset(("true", "false", "null", "none", "undef", "poison",
                             "zeroinitializer"))


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i].isspace():
        i += 1
    return i


def _quoted_end(s: str, i: int) -> int:
    """``s[i]`` is a quote: the index after the closing one (LLVM escapes quotes inside
    strings as ``\\22``, so the next quote closes)."""
    j = s.find('"', i + 1)
    if j < 0:
        raise ValueError(f"unterminated string in attributes: {s!r}")
    return j + 1


def _balanced_end(s: str, i: int, brackets: str = "(") -> int:
    """``s[i]`` opens a bracket: the index after its match, skipping quoted strings;
    ``brackets`` are the opening kinds that nest (the others are plain characters)."""
    stack = []
    n = len(s)
    while i < n:
        c = s[i]
        if c == '"':
            i = _quoted_end(s, i)
            continue
        if c in brackets:
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {brackets[0]!r} in attributes: {s!r}")


def _ident_end(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _IDENT:
        i += 1
    return i


def _chunk_end(s: str, i: int) -> int:
    """A run of non-space characters from ``i``, with the brackets and quoted strings in
    it taken whole (``@"a b"``, ``[2 x i8]``, ``<{ i8, i8 }>``)."""
    n = len(s)
    while i < n and not s[i].isspace():
        c = s[i]
        if c == '"':
            i = _quoted_end(s, i)
        elif c in _OPEN:
            i = _balanced_end(s, i, "([{<")
        else:
            i += 1
    return i


def _typed_constant_end(s: str, i: int) -> int:
    """The end of ``<type> <constant>`` from ``i`` (after ``personality``/``prefix``/
    ``prologue``): ``ptr @f``, ``[2 x i8] c"ab"``, ``i32 ptrtoint (ptr @f to i32)``."""
    i = _chunk_end(s, _skip_ws(s, i))                                # the type
    j = _skip_ws(s, i)
    if s.startswith("addrspace", j):                                 # ptr addrspace(1)
        i = _chunk_end(s, j)
    i = _skip_ws(s, i)
    start = i
    i = _chunk_end(s, i)                                             # the constant
    word = s[start:i]
    if word and all(c in _IDENT for c in word) and word not in _CONSTANT_WORDS \
            and not word[0].isdigit():
        # a constant expression: opcode and flags, then its parenthesised operands
        j = _skip_ws(s, i)
        while j < len(s) and s[j] in _IDENT_START:
            j = _skip_ws(s, _ident_end(s, j))
        if j < len(s) and s[j] == "(":
            i = _balanced_end(s, j, "([{<")
    return i


def _tokens(s: str) -> tuple[Token, ...]:
    out: list[Token] = []
    n = len(s)
    i = _skip_ws(s, 0)
    while i < n:
        c = s[i]
        start = i
        if c == '"':
            i = _quoted_end(s, i)
            key, value = s[start + 1:i - 1], None
            j = _skip_ws(s, i)
            if j < n and s[j] == "=":
                k = _skip_ws(s, j + 1)
                if k < n and s[k] == '"':
                    i = _quoted_end(s, k)
                    value = s[k + 1:i - 1]
            out.append(Token("string", key, value, s[start:i]))
        elif c == "#" and i + 1 < n and s[i + 1] in _DIGITS:
            i += 1
            while i < n and s[i] in _DIGITS:
                i += 1
            if i < n and not s[i].isspace():      # "#12abc": not a group reference
                i = _chunk_end(s, i)
                out.append(Token("other", "", None, s[start:i]))
            else:
                out.append(Token("group", s[start + 1:i], None, s[start:i]))
        elif c in _IDENT_START:
            i = _ident_end(s, i)
            name = s[start:i]
            j = _skip_ws(s, i)
            arg = None
            kind = "word"
            if j < n and s[j] == "(":                        # memory(...), comdat($f)
                i = _balanced_end(s, j)
                arg = s[j + 1:i - 1]
            elif j < n and s[j] == "=" and _skip_ws(s, j + 1) < n \
                    and s[_skip_ws(s, j + 1)] in _DIGITS:        # align=8 in a group
                k = _skip_ws(s, j + 1)
                i = k
                while i < n and s[i] in _DIGITS:
                    i += 1
                arg = s[k:i]
            elif name == "align" and j < n and s[j] in _DIGITS:  # align 8
                i = j
                while i < n and s[i] in _DIGITS:
                    i += 1
                arg = s[j:i]
            elif name in _WITH_STRING and j < n and s[j] == '"':
                i = _quoted_end(s, j)
                kind, arg = "other", s[j + 1:i - 1]
            elif name in _WITH_CONSTANT:
                i = _typed_constant_end(s, i)
                kind, arg = "other", s[j:i]
            if i < n and not s[i].isspace() and kind == "word":
                # glued to something that is no attribute syntax ("x86_fp80*", "a.b")
                i = _chunk_end(s, i)
                kind, arg = "other", None
            out.append(Token(kind, name if kind == "word" or arg is not None else "", arg,
                             s[start:i]))
        else:
            i = _chunk_end(s, i)
            out.append(Token("other", "", None, s[start:i]))
        i = _skip_ws(s, i)
    return tuple(out)


class Attributes:
    """An immutable attribute list (see the module docstring).  Edits return new lists;
    ``str()`` prints the LLVM text."""

    __slots__ = ("tokens", "braced")

    def __init__(self, tokens=(), braced: bool = False):
        self.tokens: tuple[Token, ...] = tuple(tokens)
        self.braced = braced

    @staticmethod
    def parse(text) -> Attributes:
        """The attribute list of ``text`` (an ``Attributes`` is returned as it is; None
        is empty).  Raises ValueError on unbalanced brackets or quotes."""
        if isinstance(text, Attributes):
            return text
        return _parse(text or "")

    # -- printing and comparing ------------------------------------------------------
    def __str__(self) -> str:
        body = " ".join(t.text for t in self.tokens)
        if self.braced:
            return "{ " + body + " }" if body else "{ }"
        return body

    def __repr__(self) -> str:
        return f"Attributes.parse({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Attributes) and self.braced == other.braced \
            and self.tokens == other.tokens

    def __hash__(self) -> int:
        return hash((self.tokens, self.braced))

    def __iter__(self):
        return iter(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def __bool__(self) -> bool:
        return bool(self.tokens)

    # -- queries ---------------------------------------------------------------------
    def has(self, name: str) -> bool:
        """Whether the word ``name`` is there (bare, with an argument, or ``align N``);
        words inside strings do not count, nor do the groups' contents."""
        return any(t.kind == "word" and t.name == name for t in self.tokens)

    def arg(self, name: str) -> str | None:
        """The argument of the first word ``name``: the text inside its parentheses
        (``memory(argmem: read)`` -> ``"argmem: read"``) or its integer (``align 8``,
        ``alignstack=16``); None when it is absent or bare."""
        for t in self.tokens:
            if t.kind == "word" and t.name == name:
                return t.arg
        return None

    @property
    def groups(self) -> tuple[str, ...]:
        """The attribute-group numbers referenced (``#3`` -> ``"3"``), in order."""
        return tuple(t.name for t in self.tokens if t.kind == "group")

    @property
    def strings(self) -> dict[str, str | None]:
        """The string attributes: key -> value (None for a bare ``"key"``)."""
        out: dict[str, str | None] = {}
        for t in self.tokens:
            if t.kind == "string":
                out.setdefault(t.name, t.arg)
        return out

    @property
    def words(self) -> tuple[str, ...]:
        """The names of the words, in order."""
        return tuple(t.name for t in self.tokens if t.kind == "word")

    # -- edits -----------------------------------------------------------------------
    def without(self, *names: str) -> Attributes:
        """Drop the words named (with any argument: ``without("memory")`` drops
        ``memory(read)``) and the string attributes given quoted (``'"enzyme_py"'``)."""
        drop = set(names)
        keys = {n[1:-1] for n in names if len(n) >= 2 and n[0] == n[-1] == '"'}
        kept = [t for t in self.tokens
                if not (t.kind == "word" and t.name in drop)
                and not (t.kind == "string" and t.name in keys)]
        if len(kept) == len(self.tokens):
            return self
        return Attributes(kept, self.braced)

    def with_(self, *items) -> Attributes:
        """Append attributes (text like ``"memory(none)"``, tokens or lists) that are not
        there yet: a word or string attribute of the same name, a group of the same
        number, or an identical other token is there already."""
        tokens = list(self.tokens)
        seen = {_key(t) for t in tokens}
        for item in items:
            for t in (item.tokens if isinstance(item, Attributes) else
                      (item,) if isinstance(item, Token) else Attributes.parse(item).tokens):
                if _key(t) not in seen:
                    seen.add(_key(t))
                    tokens.append(t)
        if len(tokens) == len(self.tokens):
            return self
        return Attributes(tokens, self.braced)

    def __or__(self, other) -> Attributes:
        """The union: these tokens, then those of ``other`` not here (as ``with_``)."""
        return self.with_(Attributes.parse(other))

    def replace_groups(self, mapping: dict[str, str]) -> Attributes:
        """References ``#k`` rewritten to ``#mapping[k]`` (numbers without ``#``)."""
        if not any(t.kind == "group" and t.name in mapping for t in self.tokens):
            return self
        return Attributes([Token("group", mapping[t.name], None, "#" + mapping[t.name])
                           if t.kind == "group" and t.name in mapping else t
                           for t in self.tokens], self.braced)

    def without_groups(self) -> Attributes:
        """The inline attributes alone (group references dropped)."""
        return Attributes([t for t in self.tokens if t.kind != "group"], self.braced)

    def as_group(self) -> Attributes:
        """The same list in braces (the text of an ``attributes #N = ...`` line)."""
        return self if self.braced else Attributes(self.tokens, True)

    def unbraced(self) -> Attributes:
        return Attributes(self.tokens, False) if self.braced else self


def _key(t: Token):
    return (t.kind, t.name) if t.kind in ("word", "string", "group") else (t.kind, t.text)


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> Attributes:
    s = text.strip()
    if s.startswith("{") and s.endswith("}"):
        return Attributes(_tokens(s[1:-1]), True)
    return Attributes(_tokens(s), False)


def _groups_of(module) -> dict:
    if module is None:
        return {}
    return getattr(module, "attribute_groups", None) or {}


def resolved(module, attrs) -> Attributes:
    """The attributes ``attrs`` (text or ``Attributes``) says, its group references
    replaced by those groups' attributes: the inline ones first, then each group's (a
    missing group adds nothing), without braces.  What a group repeats of an earlier
    attribute is dropped (the first stays, as in :meth:`Attributes.with_`)."""
    a = Attributes.parse(attrs)
    if not a.groups:
        return a.unbraced()
    groups = _groups_of(module)
    out = a.without_groups().unbraced()
    for key in a.groups:
        out = out.with_(Attributes.parse(groups.get(key, "")))
    return out


def add_group(module, attrs) -> str:
    """The reference (``"#N"``) of an attribute group of ``module`` holding ``attrs``:
    an existing group with the same text if there is one, else a new group numbered
    after the highest."""
    text = str(Attributes.parse(attrs).without_groups().as_group())
    groups = module.attribute_groups
    index = getattr(module, "_attribute_group_index", None)
    key = index.get(text) if index is not None else None
    if key is None or groups.get(key) != text:
        # (re)build: the module's groups may have changed since (parsing, swaps)
        index = {}
        for k, v in groups.items():
            index.setdefault(str(Attributes.parse(v).as_group()), k)
        module._attribute_group_index = index
        key = index.get(text)
        if key is None:
            key = str(max((int(k) for k in groups if k.isdigit()), default=-1) + 1)
            groups[key] = text
            index[text] = key
    return "#" + key


def stripped(module, attrs, *names: str) -> Attributes:
    """``attrs`` without the attributes ``names`` (as :meth:`Attributes.without`), in
    the inline ones and in the groups it references: each group that holds one of them
    is replaced by a group without them (:func:`add_group`)."""
    a = Attributes.parse(attrs).without(*names)
    groups = _groups_of(module)
    mapping = {}
    for key in a.groups:
        if key in groups:
            g = Attributes.parse(groups[key])
            new = g.without(*names)
            if new is not g:
                mapping[key] = add_group(module, new)[1:]
    return a.replace_groups(mapping)


def named_type(attrs, attr: str, module):
    """The type the attribute ``attr`` names in the attribute text ``attrs`` (a
    parameter's or a call argument's: ``byval(%struct.S)``, ``sret(T)``), parsed in
    ``module``; None when it is not there."""
    if not attrs or f"{attr}(" not in attrs:
        return None
    text = Attributes.parse(attrs).arg(attr)
    if text is None:
        return None
    from .parser import Parser
    return Parser(module, text).parse_type()

