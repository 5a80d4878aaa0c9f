"""The one printer: LLVM textual IR with deterministic names.

Unnamed locals are numbered ``%0, %1, ...`` in definition order (arguments,
then blocks and instruction results), as LLVM requires; clashing names get a
numeric suffix.  Printing is stable: ``print(parse(print(m))) == print(m)``.
"""

from __future__ import annotations

from . import values as V
from .types import quote_name


def global_name(name: str) -> str:
    """``@name``'s spelling: LLVM numbers unnamed globals (``@0``, ``@1``, ...) in
    definition order; they stay numbered (bare), as function bodies left unparsed
    refer to them that way."""
    return name if name.isdigit() else quote_name(name)

__all__ = ["Printer", "print_module", "print_function"]


class Printer:
    def __init__(self):
        self.names: dict = {}  # local Value -> "%x"
        self._fn_names: dict = {}  # Function -> names (for blockaddress)

    # -- naming ---------------------------------------------------------------
    def number_function(self, fn) -> dict:
        names: dict = {}
        used: set = set()
        n = 0

        def name_of(v):
            nonlocal n
            nm = v.name
            if nm is None or nm == "" or nm.isdigit():
                s = str(n)
                n += 1
                return "%" + s
            if nm in used:
                k = 1
                while f"{nm}{k}" in used:
                    k += 1
                nm = f"{nm}{k}"
            used.add(nm)
            return "%" + quote_name(nm)

        for a in fn.args:
            names[a] = name_of(a)
        for b in fn.blocks:
            names[b] = name_of(b)
            for i in b.instructions:
                if not i.type.is_void:
                    names[i] = name_of(i)
        return names

    def ref(self, v) -> str:
        """How ``v`` is spelled as an operand (without its type)."""
        s = self.names.get(v)
        if s is not None:
            return s
        if v.is_global:
            return "@" + global_name(v.name)
        if v.is_constant:
            return self.const(v)
        if isinstance(v, V.TemplateUser):
            return v.render(self.ref)
        if isinstance(v, V.InlineAsm):
            return v.text
        key = getattr(v, "key", None)
        if key is not None:  # an unresolved forward reference (lazy blockaddress)
            return "%" + (key if key.isdigit() else quote_name(key))
        return "%<unnamed " + type(v).__name__ + ">"

    def tv(self, v) -> str:
        return f"{v.type} {self.ref(v)}"

    def lbl(self, b) -> str:
        return "label " + self.ref(b)

    def const(self, c) -> str:
        t = type(c)
        if t is V.ConstantInt:
            if c.type.width == 1:
                return "true" if c.value else "false"
            return str(c.value)
        if t is V.ConstantFP:
            return c.text
        if isinstance(c, V._Keyword):
            return c.keyword
        if t is V.ConstantAggregate:
            ty = c.type
            els = ", ".join(self.tv(u.value) for u in c._ops)
            if ty.is_struct:
                if not els:
                    return "<{}>" if ty.packed else "{}"
                return f"<{{ {els} }}>" if ty.packed else f"{{ {els} }}"
            if ty.is_vector:
                return f"<{els}>"
            return f"[{els}]"
        if t is V.ConstantString:
            return "c" + c.text
        if t is V.ConstantSplat:
            return f"splat ({self.tv(c.operand(0))})"
        if t is V.ConstantExpr:
            s = c.opcode + (" " + c.flags if c.flags else "") + " ("
            if c.source_type is not None:
                s += str(c.source_type) + ", "
            s += ", ".join(self.tv(u.value) for u in c._ops)
            if c.dest_type is not None:
                s += f" to {c.dest_type}"
            return s + ")"
        if t is V.BlockAddress:
            fn, bb = c.operands
            bname = None
            if getattr(fn, "is_function", False) and bb.is_block:
                names = self._fn_names.get(fn)
                if names is None:
                    names = self._fn_names[fn] = self.number_function(fn)
                bname = names.get(bb)
            return f"blockaddress({self.ref(fn)}, {bname or self.ref(bb)})"
        if t is V.GlobalRefConstant:
            return f"{c.keyword} {self.ref(c.operand(0))}"
        raise TypeError(f"cannot print constant {c!r}")

    def value_str(self, v) -> str:
        """``str()`` of a value: an instruction prints as its line, others as typed refs."""
        if v.is_instruction:
            fn = v.function
            if fn is not None:
                self.names = self.number_function(fn)
            return self.instruction(v).lstrip()
        if v.is_global:
            return f"{v.type} @{global_name(v.name)}"
        return self.tv(v)

    # -- instructions, blocks, functions ------------------------------------------
    def instruction(self, inst) -> str:
        out = ""
        if inst.dbg_records:
            out = "".join("    " + r.render(self.ref) + "\n" for r in inst.dbg_records)
        if inst.type.is_void:
            s = "  " + inst._print(self)
        else:
            s = "  " + self.ref(inst) + " = " + inst._print(self)
        if inst.metadata:
            s += "".join(f", !{k} {v}" for k, v in inst.metadata)
        return out + s

    def function(self, fn) -> str:
        ft = fn.function_type
        decl = fn.is_declaration and fn._lazy_body is None
        head = "declare" if decl else "define"
        if decl and fn.attachments:
            head += "".join(f" !{k} {v}" for k, v in fn.attachments)
        if fn.prefix:
            head += " " + fn.prefix
        lazy = fn._lazy_body is not None
        if not decl and not lazy:
            self.names = self.number_function(fn)
        params = []
        n = 0
        for a in fn.args:
            s = str(a.type)
            if a.attrs:
                s += " " + a.attrs
            if not decl:
                if lazy:
                    if a.name is None:
                        s += f" %{n}"
                        n += 1
                    else:
                        s += " %" + quote_name(a.name)
                else:
                    s += " " + self.names[a]
            params.append(s)
        if ft.varargs:
            params.append("...")
        s = f"{head} {ft.ret} @{global_name(fn.name)}({', '.join(params)})"
        if fn.fn_attrs:
            s += " " + fn.fn_attrs
        for kind, v in zip(fn._slot_names, fn.operands):
            s += f" {'prefix' if kind == 'prefix' else kind} {self.tv(v)}"
        if not decl:
            if fn.attachments:
                s += "".join(f" !{k} {v}" for k, v in fn.attachments)
            if lazy:
                text, start, end, _ = fn._lazy_body
                return s + " " + text[start:end - 1] + "}"
            s += " {\n"
            first = True
            for b in fn._blocks:
                if not first:
                    s += "\n"
                    s += self.names[b][1:] + ":\n"
                elif b.name is not None:
                    s += self.names[b][1:] + ":\n"
                first = False
                s += "".join(self.instruction(i) + "\n" for i in b.instructions)
            s += "}"
        return s

    def global_variable(self, g) -> str:
        s = f"@{global_name(g.name)} ="
        if g.prefix:
            s += " " + g.prefix
        s += " constant " if g.is_constant else " global "
        s += str(g.value_type)
        init = g.initializer
        if init is not None:
            s += " " + self.ref(init)
        return s + g.tail

    def alias(self, a) -> str:
        s = f"@{global_name(a.name)} ="
        if a.prefix:
            s += " " + a.prefix
        return s + f" {a.keyword} {a.value_type}, {self.tv(a.target)}" + (a.tail or "")

    def module(self, m) -> str:
        out = []
        if m.header_comment:
            out.append(m.header_comment)
        if m.source_filename is not None:
            out.append(f'source_filename = "{m.source_filename}"')
        if m.datalayout_text is not None:
            out.append(f'target datalayout = "{m.datalayout_text}"')
        if m.triple is not None:
            out.append(f'target triple = "{m.triple}"')
        out.extend(f"module asm {x}" if not x.startswith("module asm") else x
                   for x in m.module_asm)
        if m.types:
            out.append("")
            for t in m.types.values():
                out.append(f"{t} = type {t.definition()}")
        if m.comdats:
            out.append("")
            out.extend(m.comdats)
        if m.global_variables:
            out.append("")
            out.extend(self.global_variable(g) for g in m.global_variables)
        if m.aliases:
            out.append("")
            out.extend(self.alias(a) for a in m.aliases)
        for f in m.functions:
            out.append("")
            out.append(self.function(f))
        if m.attribute_groups:
            out.append("")
            out.extend(f"attributes #{k} = {v}" for k, v in m.attribute_groups.items())
        if m.named_metadata or m.metadata:
            out.append("")
            out.extend(f"!{k} = {v}" for k, v in m.named_metadata.items())
            out.extend(f"!{k} = {v}" for k, v in m.metadata.items())
        return "\n".join(out).lstrip("\n") + "\n"


def print_module(m) -> str:
    return Printer().module(m)


def print_function(fn) -> str:
    return Printer().function(fn)
