"""Metadata nodes as small objects.

The module keeps each numbered node as the text LLVM printed (``Module.metadata``:
``"12" -> '!{!"double", !13, i64 0}'``), so nodes nobody reads cost nothing and come
back byte for byte.  What the AD pass reads or builds goes through this module instead
of string slicing:

- :class:`MDNode` -- a generic node, ``!{...}`` or ``distinct !{...}``, with its operands
  as objects: :class:`MDString` (``!"double"``), :class:`MDRef` (``!13``),
  :class:`MDValue` (a typed constant, ``i64 0``), a nested :class:`MDNode`, or
  :class:`MDRaw` (anything else, kept verbatim);
- :class:`MDSpecialized` -- ``!DILocation(line: 3, column: 7, scope: !12)`` and the
  other specialised nodes, with their ``field: value`` pairs;
- :func:`node` reads a reference of a module, :func:`add` appends a node and
  :func:`add_self_referencing` a ``distinct`` node whose first operand is itself (alias
  scopes and their domains).

``str()`` of each prints LLVM's syntax, so ``MDNode.parse(text)`` and ``str`` round-trip.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MDString", "MDRef", "MDValue", "MDRaw", "MDNode", "MDSpecialized", "parse",
           "node", "add", "add_self_referencing", "loop_id_without_locations"]


@dataclass(frozen=True)
class MDString:
    """``!"text"`` (``value``: the text with LLVM's ``\\XX`` escapes decoded)."""
    value: str

    def __str__(self):
        out = []
        for ch in self.value:
            if ch == '"' or ch == "\\" or not (" " <= ch <= "~"):
                out.extend(f"\\{b:02X}" for b in ch.encode())
            else:
                out.append(ch)
        return '!"' + "".join(out) + '"'


@dataclass(frozen=True)
class MDRef:
    """``!12``: a reference to the module's node number ``number``."""
    number: int

    def __str__(self):
        return f"!{self.number}"


@dataclass(frozen=True)
class MDValue:
    """A typed constant operand: ``i64 0``, ``ptr @g`` (``type`` and ``value`` as
    printed)."""
    type: str
    value: str

    def __str__(self):
        return f"{self.type} {self.value}"


@dataclass(frozen=True)
class MDRaw:
    """An operand this module does not model (``null``, an ``!DIExpression()``...),
    kept verbatim."""
    text: str

    def __str__(self):
        return self.text


@dataclass(frozen=True)
class MDNode:
    """A generic node ``!{op, ...}``; ``distinct`` when it is never merged with an equal
    one (self-referencing alias scopes)."""
    operands: tuple = ()
    distinct: bool = False

    @staticmethod
    def parse(text: str) -> MDNode | None:
        """The node ``text`` spells, or None when it is not a generic node."""
        distinct, s = _distinct(text)
        if not (s.startswith("!{") and s.endswith("}")):
            return None
        body = s[2:-1]
        return MDNode(tuple(_operand(p) for p in _split(body)), distinct)

    def refs(self) -> list[int]:
        """The node numbers this node's operands refer to, in order."""
        return [op.number for op in self.operands if isinstance(op, MDRef)]

    def __str__(self):
        return ("distinct " if self.distinct else "") + \
            "!{" + ", ".join(str(op) for op in self.operands) + "}"


@dataclass(frozen=True)
class MDSpecialized:
    """``!DILocation(line: 3, column: 7, scope: !12)``: the node's ``kind`` (without
    the ``!``) and its fields in order, values as printed."""
    kind: str
    fields: tuple = ()
    distinct: bool = False

    @staticmethod
    def parse(text: str) -> MDSpecialized | None:
        distinct, s = _distinct(text)
        if not s.startswith("!") or "(" not in s or not s.endswith(")"):
            return None
        kind, _, rest = s[1:].partition("(")
        if not kind.isidentifier():
            return None
        fields = []
        for part in _split(rest[:-1]):
            k, sep, v = part.partition(":")
            if not sep:
                return None
            fields.append((k.strip(), v.strip()))
        return MDSpecialized(kind, tuple(fields), distinct)

    def get(self, name, default=None):
        for k, v in self.fields:
            if k == name:
                return v
        return default

    def __str__(self):
        return ("distinct " if self.distinct else "") + f"!{self.kind}(" + \
            ", ".join(f"{k}: {v}" for k, v in self.fields) + ")"


def parse(text: str):
    """A node's text as an :class:`MDNode` or :class:`MDSpecialized`; None otherwise."""
    return MDNode.parse(text) or MDSpecialized.parse(text)


def node(module, ref):
    """The node a reference (``"!12"``, :class:`MDRef`) names in ``module``: an
    :class:`MDNode` or :class:`MDSpecialized`, or None (no such node, not a
    reference, a node of another syntax)."""
    if module is None or ref is None:
        return None
    if isinstance(ref, MDRef):
        key = str(ref.number)
    elif isinstance(ref, str) and ref.startswith("!") and ref[1:].isdigit():
        key = ref[1:]
    else:
        return None
    text = module.metadata.get(key)
    return parse(text) if text is not None else None


def add(module, md) -> MDRef:
    """Append ``md`` (a node object) to ``module``'s numbered metadata."""
    return _ref(module.add_metadata(str(md)))


def add_self_referencing(module, *operands) -> MDRef:
    """A ``distinct !{!self, operands...}`` node: an alias scope (``operands``: its
    domain and name) or a domain (its name)."""
    ref = _ref(module.add_metadata("!{}"))
    module.metadata[str(ref.number)] = str(MDNode((ref, *operands), distinct=True))
    return ref


def loop_id_without_locations(module, ref: str) -> str:
    """The reference of a loop's ``!llvm.loop`` node for a copy of the loop in a
    function that has no ``DISubprogram``: the same properties (``mustprogress``,
    unroll and vectorize hints), without the ``DILocation`` operands (where the loop
    starts and ends), which name the original function's scope — the verifier rejects
    them elsewhere ("!dbg attachment points at wrong subprogram"), once the copy is
    inlined into a function with debug info.  A node with no location is ``ref``
    itself; otherwise a new ``distinct`` self-referencing node."""
    md = node(module, ref)
    if not (isinstance(md, MDNode) and md.distinct and md.operands
            and md.operands[0] == _ref(ref)):
        return ref
    kept = tuple(op for op in md.operands[1:] if not _is_location(module, op))
    if len(kept) == len(md.operands) - 1:
        return ref
    return str(add_self_referencing(module, *kept))


def _is_location(module, op) -> bool:
    if isinstance(op, MDRef):
        op = node(module, op)
    elif isinstance(op, MDRaw):
        op = MDSpecialized.parse(op.text)
    return isinstance(op, MDSpecialized) and op.kind == "DILocation"


def _ref(text: str) -> MDRef:
    return MDRef(int(text[1:]))


def _distinct(text: str) -> tuple[bool, str]:
    """Whether a node's text starts with ``distinct``, and the text after it."""
    s = text.strip()
    if s.startswith("distinct "):
        return True, s[len("distinct "):].lstrip()
    return False, s


def _split(body: str) -> list[str]:
    """``body`` split at the commas outside strings and brackets."""
    parts, depth, start, i, n = [], 0, 0, 0, len(body)
    while i < n:
        c = body[i]
        if c == '"':
            i = body.index('"', i + 1) if '"' in body[i + 1:] else n
        elif c in "({[<":
            depth += 1
        elif c in ")}]>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
        i += 1
    last = body[start:].strip()
    if last or parts:
        parts.append(last)
    return parts


def _operand(text: str):
    if text.startswith('!"') and text.endswith('"'):
        return MDString(_unescape(text[2:-1]))
    if text.startswith("!") and text[1:].isdigit():
        return MDRef(int(text[1:]))
    if text.startswith("!{") or text.startswith("distinct !{"):
        inner = MDNode.parse(text)
        if inner is not None:
            return inner
    ty, sep, value = text.partition(" ")
    if sep and (ty[:1] == "i" and ty[1:].isdigit() or ty in ("ptr", "float", "double")):
        return MDValue(ty, value.strip())
    return MDRaw(text)


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] == "\\" and i + 2 < len(s) + 1 and _is_hex(s[i + 1:i + 3]):
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
        else:
            out.extend(s[i].encode())
            i += 1
    return out.decode("utf-8", "replace")


def _is_hex(t: str) -> bool:
    return len(t) == 2 and all(c in "0123456789abcdefABCDEF" for c in t)
