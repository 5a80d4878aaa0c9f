"""Blocks, functions, global variables, aliases/ifuncs and the module.

Function bodies parsed from text are materialized lazily: ``fn.blocks`` parses
the body on first access; a body never touched is printed back verbatim.
Accessing the use list of a global parses every lazy body whose text names it
(and no other), so RAUW/rename of a global always sees all its uses while the
bodies of unrelated functions stay unparsed.
"""

from __future__ import annotations

import re

from . import types as T
from .instructions import Instruction, Phi
from .metadata import MDSpecialized
from .values import Argument, Constant, IRError, Value

__all__ = ["BasicBlock", "GlobalValue", "Function", "GlobalVariable", "GlobalAlias",
           "GlobalIFunc", "Module"]

LINKAGES = {"private", "internal", "available_externally", "linkonce", "weak", "common",
            "appending", "extern_weak", "linkonce_odr", "weak_odr", "external"}


class BasicBlock(Value):
    """A labelled list of instructions; its uses are the branches that target it."""

    is_block = True

    def __init__(self, name=None, parent=None):
        super().__init__(T.label, name)
        self.parent = parent  # Function
        self.instructions: list[Instruction] = []

    def __iter__(self):
        return iter(self.instructions)

    def __len__(self):
        return len(self.instructions)

    def index_of(self, inst) -> int:
        insts = self.instructions
        # fast path for the common "near the end" case
        n = len(insts)
        if n and insts[-1] is inst:
            return n - 1
        for i, x in enumerate(insts):
            if x is inst:
                return i
        raise IRError("instruction is not in this block")

    def append(self, inst: Instruction) -> Instruction:
        if inst.parent is not None:
            raise IRError("instruction is already in a block")
        inst.parent = self
        self.instructions.append(inst)
        return inst

    def insert(self, index: int, inst: Instruction) -> Instruction:
        if inst.parent is not None:
            raise IRError("instruction is already in a block")
        inst.parent = self
        self.instructions.insert(index, inst)
        return inst

    def split_after(self, inst) -> BasicBlock:
        """Move everything after ``inst`` into a new block placed right after this one
        and return it; the successors' phis name the new block.  This block is left
        without a terminator, for the caller to finish."""
        fn = self.parent
        tail = fn.insert_basic_block(fn.blocks.index(self) + 1)
        for moved in self.instructions[self.index_of(inst) + 1:]:
            moved.remove_from_parent()
            tail.append(moved)
        for succ in tail.successors:
            for phi in succ.phis:
                for i, (_, b) in enumerate(phi.incoming):
                    if b is self:
                        phi.set_incoming_block(i, tail)
        return tail

    @property
    def terminator(self) -> Instruction | None:
        if self.instructions and self.instructions[-1].is_terminator:
            return self.instructions[-1]
        return None

    @property
    def phis(self) -> list[Phi]:
        out = []
        for i in self.instructions:
            if not isinstance(i, Phi):
                break
            out.append(i)
        return out

    @property
    def first_non_phi(self) -> Instruction | None:
        for i in self.instructions:
            if not isinstance(i, Phi):
                return i
        return None

    @property
    def successors(self) -> list[BasicBlock]:
        t = self.terminator
        return t.successors if t is not None else []

    @property
    def predecessors(self) -> list[BasicBlock]:
        """Blocks whose terminator branches here (in use-list order, deduplicated)."""
        seen, out = set(), []
        for u in self._uses:
            user = u.user
            if user.is_instruction and user.is_terminator and user.parent is not None:
                b = user.parent
                if id(b) not in seen:
                    seen.add(id(b))
                    out.append(b)
        return out

    def erase(self) -> None:
        """Remove the block (which must have no remaining uses) and its instructions."""
        if any(not (u.user.is_instruction and u.user.parent is self) for u in self._uses):
            raise IRError(f"cannot erase block {self.name or ''}: it still has uses")
        for inst in self.instructions:
            for r in inst.dbg_records:
                r.drop_all_references()
            inst.dbg_records = []
            inst.drop_all_references()
        for inst in reversed(self.instructions):
            if inst._uses:
                raise IRError(f"cannot erase block: {inst.opcode} result still used")
            inst.parent = None
        self.instructions = []
        if self.parent is not None:
            self.parent.blocks.remove(self)
            self.parent = None

    def __repr__(self):
        return f"<BasicBlock {self.name or ''}>"


class GlobalValue(Constant):
    """Functions, global variables, aliases, ifuncs: named, module-level, pointer-typed."""

    is_global = True
    is_function = False

    def __init__(self, name, type, operands=(), module=None):
        super().__init__(type, operands, name)
        self.parent = module
        self.prefix = ""  # linkage, visibility, ... as text

    @property
    def uses(self):
        if self.parent is not None:
            self.parent.materialize_users(self.name)
        return list(self._uses)

    @property
    def linkage(self) -> str:
        for w in self.prefix.split():
            if w in LINKAGES:
                return w
        return "external"

    def set_linkage(self, linkage: str) -> None:
        words = [w for w in self.prefix.split() if w not in LINKAGES]
        if linkage and linkage != "external":
            words.insert(0, linkage)
        self.prefix = " ".join(words)

    @property
    def is_declaration(self) -> bool:
        raise NotImplementedError

    def rename(self, new_name: str) -> None:
        if self.parent is not None:
            self.parent._rename(self, new_name)
        else:
            self.name = new_name

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def clone(self, vmap=None):
        return self


class Function(GlobalValue):
    """``define``/``declare``; ``prefix`` holds linkage, visibility, cc and return attributes.

    ``fn_attrs`` is the text between ``)`` and the body (``local_unnamed_addr #0``,
    ``comdat``, ``section``...).  ``personality``, ``prefix_data`` and ``prologue``
    are operands.  ``attachments`` are ``(kind, text)`` like ``("dbg", "!12")``.
    """

    is_function = True
    _SLOTS = ("personality", "prefix_data", "prologue")

    def __init__(self, module, name, fnty: T.FunctionType, arg_names=None, arg_attrs=None,
                 prefix="", fn_attrs="", addrspace=0):
        super().__init__(name, T.PointerType(addrspace), (), module)
        self.function_type = fnty
        self.prefix, self.fn_attrs = prefix, fn_attrs
        self.attachments: list[tuple[str, str]] = []
        self._slot_names: list[str] = []
        names = arg_names or [None] * len(fnty.params)
        attrs = arg_attrs or [""] * len(fnty.params)
        self.args = [Argument(t, n, self, i, a) for i, (t, n, a) in
                     enumerate(zip(fnty.params, names, attrs))]
        self._blocks: list[BasicBlock] = []
        self._is_definition = False
        self._lazy_body = None  # (text, offset, lineno) until materialized

    # -- lazy body -----------------------------------------------------------
    @property
    def is_materialized(self) -> bool:
        return self._lazy_body is None

    def materialize(self) -> None:
        if self._lazy_body is not None:
            from .body_parser import parse_function_body
            parse_function_body(self)

    @property
    def blocks(self) -> list[BasicBlock]:
        if self._lazy_body is not None:
            self.materialize()
        return self._blocks

    @property
    def is_declaration(self) -> bool:
        return not self._is_definition

    @property
    def entry_block(self) -> BasicBlock:
        return self.blocks[0]

    @property
    def return_type(self) -> T.Type:
        return self.function_type.ret

    def __iter__(self):
        return iter(self.blocks)

    def instructions(self):
        """All instructions in block order."""
        for b in self.blocks:
            yield from b.instructions

    def append_basic_block(self, name=None) -> BasicBlock:
        self._is_definition = True
        b = BasicBlock(name, self)
        self.blocks.append(b)
        return b

    def insert_basic_block(self, index: int, name=None) -> BasicBlock:
        self._is_definition = True
        b = BasicBlock(name, self)
        self.blocks.insert(index, b)
        return b

    def delete_body(self) -> None:
        for b in list(reversed(self.blocks)):
            for i in b.instructions:
                i.drop_all_references()
                for r in i.dbg_records:
                    r.drop_all_references()
        for b in self.blocks:
            b._uses.clear()
            for i in b.instructions:
                i._uses.clear()
        self._blocks = []
        self._is_definition = False

    # -- constant slots (personality, prefix, prologue) ------------------------
    def _get_slot(self, kind):
        try:
            return self._ops[self._slot_names.index(kind)].value
        except ValueError:
            return None

    def _set_slot(self, kind, value):
        if kind in self._slot_names:
            i = self._slot_names.index(kind)
            if value is None:
                self.remove_operand(i)
                self._slot_names.pop(i)
            else:
                self.set_operand(i, value)
        elif value is not None:
            self.append_operand(value)
            self._slot_names.append(kind)

    personality = property(lambda s: s._get_slot("personality"),
                           lambda s, v: s._set_slot("personality", v))
    prefix_data = property(lambda s: s._get_slot("prefix"), lambda s, v: s._set_slot("prefix", v))
    prologue = property(lambda s: s._get_slot("prologue"), lambda s, v: s._set_slot("prologue", v))

    def get_attachment(self, kind):
        for k, v in self.attachments:
            if k == kind:
                return v
        return None

    # -- cloning ----------------------------------------------------------------
    def clone(self, new_name: str | None = None, vmap: dict | None = None) -> Function:
        """Copy this function into a new one in the same module (``clone`` with a value map).

        ``vmap`` (filled in and returned through the argument) maps every old
        argument, block and instruction to its copy.  With ``new_name`` None a
        fresh name based on this one is chosen.
        """
        if new_name is None and vmap is None:
            return self  # as a constant operand: globals are not copied
        mod = self.parent
        vmap = {} if vmap is None else vmap
        name = mod.fresh_name(new_name or self.name) if mod is not None else new_name
        fn = Function(mod, name, self.function_type, [a.name for a in self.args],
                      [a.attrs for a in self.args], self.prefix, self.fn_attrs)
        fn.attachments = [kv for kv in self.attachments if kv[0] != "dbg"]
        for k, v in zip(self._slot_names, self.operands):
            fn._set_slot(k, v)
        if mod is not None:
            mod._add(fn, mod.functions)
        for a, b in zip(self.args, fn.args):
            vmap[a] = b
        for bb in self.blocks:
            nb = fn.append_basic_block(bb.name)
            vmap[bb] = nb
        new_insts = []
        for bb in self.blocks:
            nb = vmap[bb]
            for inst in bb.instructions:
                c = inst.clone(vmap)
                vmap[inst] = c
                nb.append(c)
                new_insts.append(c)
        get = vmap.get
        for c in new_insts:  # forward references (phis, loops)
            for u in c._ops:
                m = get(u.value)
                if m is not None:
                    c.set_operand(u.index, m)
            for r in c.dbg_records:
                for u in r._ops:
                    m = get(u.value)
                    if m is not None:
                        r.set_operand(u.index, m)
        return fn

    def erase(self) -> None:
        if self._uses:
            raise IRError(f"cannot erase function @{self.name}: it still has uses")
        self.delete_body()
        self.drop_all_references()
        if self.parent is not None:
            self.parent._remove(self, self.parent.functions)

    def __repr__(self):
        return f"<Function @{self.name}>"


class GlobalVariable(GlobalValue):
    """``@g = <prefix> global|constant T [init][tail]``; initializer is operand 0."""

    def __init__(self, module, name, value_type, initializer=None, is_constant=False,
                 prefix="", tail="", addrspace=0):
        super().__init__(name, T.PointerType(addrspace),
                         [initializer] if initializer is not None else [], module)
        self.value_type, self.is_constant = value_type, is_constant
        self.prefix, self.tail = prefix, tail

    @property
    def initializer(self):
        return self.operand(0) if self._ops else None

    @initializer.setter
    def initializer(self, v):
        if self._ops:
            if v is None:
                self.remove_operand(0)
            else:
                self.set_operand(0, v)
        elif v is not None:
            self.append_operand(v)

    @property
    def is_declaration(self):
        return not self._ops

    @property
    def align(self) -> int | None:
        m = re.search(r", align (\d+)", self.tail)
        return int(m.group(1)) if m else None

    def erase(self):
        if self.uses:
            raise IRError(f"cannot erase global @{self.name}: it still has uses")
        self.drop_all_references()
        if self.parent is not None:
            self.parent._remove(self, self.parent.global_variables)

    def __repr__(self):
        return f"<GlobalVariable @{self.name}>"


class GlobalAlias(GlobalValue):
    """``@a = <prefix> alias T, ptr @target[tail]``; the target is operand 0."""

    keyword = "alias"

    def __init__(self, module, name, value_type, target, prefix="", tail="", type=T.ptr):
        super().__init__(name, type, [target], module)
        self.value_type, self.prefix, self.tail = value_type, prefix, tail

    @property
    def target(self):
        return self.operand(0)

    is_declaration = False


class GlobalIFunc(GlobalAlias):
    keyword = "ifunc"




class Module:
    """A translation unit: types, globals, functions and the verbatim rest."""

    def __init__(self, name: str = ""):
        self.source_filename: str | None = name or None
        self.header_comment: str | None = None  # "; ModuleID = ..."
        self.datalayout_text: str | None = None
        self.triple: str | None = None
        self.types: dict[str, T.IdentifiedStructType] = {}
        self.comdats: list[str] = []  # verbatim "$x = comdat any"
        self.global_variables: list[GlobalVariable] = []
        self.aliases: list[GlobalAlias] = []
        self.functions: list[Function] = []
        self.attribute_groups: dict[str, str] = {}  # "0" -> "{ nounwind ... }"
        self.named_metadata: dict[str, str] = {}  # "llvm.module.flags" -> "!{!0, !1}"
        self.metadata: dict[str, str] = {}  # "12" -> "!DILocation(...)" (verbatim)
        self.module_asm: list[str] = []  # verbatim lines
        self.symbols: dict[str, GlobalValue] = {}
        self._dl: T.DataLayout | None = None
        self._dbg_cache: dict[str, object] = {}
        # names whose users' bodies are parsed (``materialize_users``); emptied when a
        # body becomes lazy again (the module parser, a body that failed to parse)
        self._users_parsed: set = set()

    # -- layout -------------------------------------------------------------------
    @property
    def datalayout(self) -> T.DataLayout:
        if self._dl is None or self._dl.text != (self.datalayout_text or ""):
            self._dl = T.DataLayout(self.datalayout_text or "")
        return self._dl

    # -- symbols ------------------------------------------------------------------
    def get_function(self, name: str) -> Function | None:
        g = self.symbols.get(name)
        return g if isinstance(g, Function) else None

    def get_global(self, name: str) -> GlobalValue | None:
        return self.symbols.get(name)

    def fresh_name(self, base: str) -> str:
        """``base`` if unused, else ``base.1``, ``base.2``, ..."""
        if base not in self.symbols:
            return base
        i = 1
        while f"{base}.{i}" in self.symbols:
            i += 1
        return f"{base}.{i}"

    def _add(self, g: GlobalValue, lst: list) -> GlobalValue:
        if g.name in self.symbols:
            raise IRError(f"symbol @{g.name} already exists")
        self.symbols[g.name] = g
        g.parent = self
        lst.append(g)
        return g

    def _remove(self, g, lst):
        del self.symbols[g.name]
        lst.remove(g)
        g.parent = None

    def _rename(self, g, new_name):
        if new_name in self.symbols:
            raise IRError(f"symbol @{new_name} already exists")
        self.materialize_users(g.name)
        del self.symbols[g.name]
        g.name = new_name
        self.symbols[new_name] = g

    def add_function(self, name: str, fnty: T.FunctionType, linkage: str = "",
                     arg_names=None, arg_attrs=None, fn_attrs: str = "",
                     unique: bool = True) -> Function:
        """A new declaration (add blocks to make it a definition).

        With ``unique`` the name is made fresh if taken (see ``fresh_name``).
        """
        if unique:
            name = self.fresh_name(name)
        fn = Function(self, name, fnty, arg_names, arg_attrs, linkage, fn_attrs)
        return self._add(fn, self.functions)

    def get_or_insert_function(self, name: str, fnty: T.FunctionType, **kw) -> Function:
        f = self.get_function(name)
        if f is not None:
            return f
        return self.add_function(name, fnty, unique=False, **kw)

    def add_global(self, name: str, value_type: T.Type, initializer=None, constant=False,
                   linkage: str = "", align: int | None = None, unique: bool = True,
                   addrspace: int = 0) -> GlobalVariable:
        if unique:
            name = self.fresh_name(name)
        tail = f", align {align}" if align else ""
        g = GlobalVariable(self, name, value_type, initializer, constant, linkage, tail, addrspace)
        return self._add(g, self.global_variables)

    def add_type(self, name: str, elements=None, packed=False) -> T.IdentifiedStructType:
        t = self.types.get(name)
        if t is None:
            t = self.types[name] = T.IdentifiedStructType(name)
        if elements is not None:
            t.set_body(elements, packed)
        return t

    def add_metadata(self, text: str) -> str:
        """Append a numbered metadata node; returns its reference ``!N``."""
        n = max((int(k) for k in self.metadata), default=-1) + 1
        self.metadata[str(n)] = text
        return f"!{n}"

    def materialize_all(self) -> None:
        for f in self.functions:
            if f._lazy_body is not None:
                f.materialize()

    def materialize_users(self, name: str) -> None:
        """Parse the lazy bodies that may refer to the global ``@name``: those whose
        text holds the name (a superset of the users; bodies never parsed hold no
        uses, so the use list of ``@name`` is then complete)."""
        from .types import quote_name
        if name in self._users_parsed:
            return      # (a search over every lazy body's text each time: -O0 C++ has
            #            thousands, and the analyses ask for the same uses again)
        if quote_name(name) != name:    # spelled with quotes and escapes: be safe
            self.materialize_all()
        else:
            # (a name LLVM could print bare may still be quoted in the text: clang
            # quotes a lambda's ``$_0`` in C++ mangled names)
            needles = ("@" + name, '@"' + name + '"')
            for f in self.functions:
                lazy = f._lazy_body
                if lazy is not None and any(lazy[0].find(n, lazy[1], lazy[2]) >= 0
                                            for n in needles):
                    f.materialize()
        self._users_parsed.add(name)

    # -- debug info ------------------------------------------------------------
    def _md_fields(self, ref: str) -> dict:
        if ref in self._dbg_cache:
            return self._dbg_cache[ref]
        numbered = ref.startswith("!") and ref[1:].isdigit()
        node = MDSpecialized.parse(self.metadata.get(ref[1:], "") if numbered else ref)
        fields = dict(node.fields) if node is not None else {}
        self._dbg_cache[ref] = fields
        return fields

    def debug_location(self, ref: str):
        """``(filename, line, column)`` of a ``!DILocation`` reference such as ``!12``."""
        loc = self._md_fields(ref)
        if "line" not in loc:
            return None
        scope, fname, depth = loc.get("scope"), None, 0
        while scope and depth < 64:
            f = self._md_fields(scope)
            if "file" in f:
                ff = self._md_fields(f["file"])
                fname = ff.get("filename", '""')[1:-1]
                break
            scope, depth = f.get("scope"), depth + 1
        return (fname or "<unknown>", int(loc["line"]), int(loc.get("column", 0)))

    def __str__(self) -> str:
        from .printer import print_module
        return print_module(self)

    def __repr__(self):
        return f"<Module {self.source_filename!r}: {len(self.functions)} functions>"
