"""The instruction layer of the parser: function bodies, parsed lazily.

:class:`BodyParser` extends the constant and type parser (:class:`.parser.Parser`)
with local values, blocks and one method per instruction family (``_DISPATCH`` maps
each opcode to it); :func:`parse_function_body` materializes a body the module
parser (:mod:`.module_parser`) recorded, on first access to ``fn.blocks``.
"""

from __future__ import annotations

from . import instructions as I
from . import types as T
from . import values as V
from .lexer import ATTRGRP, DBG, EOF, INT, KW, LABEL, LOCAL, META, PUNCT, STR, ParseError
from .module import BasicBlock, Function
from .parser import _ORDERINGS, FMF, Parser, _Forward, _unquote

__all__ = ["parse_function_body", "BodyParser"]


# ============================================================================
# function bodies
# ============================================================================

class BodyParser(Parser):
    def __init__(self, fn: Function, text, start, end, line_offset):
        super().__init__(fn.parent, text, start, end, line_offset)
        self.fn = fn
        self.locals: dict[str, V.Value] = {}
        self.fwd: dict[str, _Forward] = {}
        self.blocks: dict[str, BasicBlock] = {}
        for a in fn.args:
            if a.name is not None:
                self.locals[a.name] = a
        n = 0
        for a in fn.args:
            if a.name is None:
                self.locals[str(n)] = a
                n += 1

    def lookup_local(self, tok, ty):
        key = _unquote(tok[1:])
        v = self.locals.get(key)
        if v is not None:
            return v
        f = self.fwd.get(key)
        if f is None:
            f = self.fwd[key] = _Forward(ty, key)
        elif f.type is T.void and ty is not T.void:
            f.type = ty  # first seen in a debug record, now with its type
        return f

    def lookup_block(self, tok):
        key = _unquote(tok[1:])
        b = self.blocks.get(key)
        if b is None:
            b = BasicBlock(None if key.isdigit() else key, self.fn)
            self.blocks[key] = b
            f = self.fwd.pop(key, None)
            if f is not None:
                f.replace_all_uses_with(b)
        return b

    def parse_label_ref(self):
        self.parse_kw("label")
        if self.kinds[self.i] != LOCAL:
            raise self.expected("a block label")
        self.i += 1
        return self.lookup_block(self.toks[self.i - 1])

    def define(self, key, v):
        f = self.fwd.pop(key, None)
        if f is not None:
            f.replace_all_uses_with(v)
        if key in self.locals:
            raise self.error(f"redefinition of %{key}")
        self.locals[key] = v

    def parse_body(self):
        fn = self.fn
        blocks = fn._blocks
        self.parse_punct("{")
        cur = None
        pending: list[V.DebugRecord] = []
        kinds, toks = self.kinds, self.toks
        while True:
            k = kinds[self.i]
            if k == LABEL:
                key = _unquote(toks[self.i][:-1])
                self.i += 1
                cur = self.lookup_block("%" + key if not key.startswith('"') else '%"' + key + '"')
                if cur in blocks:
                    raise self.error(f"redefinition of block {key}")
                blocks.append(cur)
                continue
            if k == PUNCT and toks[self.i] == "}":
                break
            if k == EOF:
                raise self.expected("'}'")
            if cur is None:  # unnamed entry block: numbered after the unnamed args
                cur = BasicBlock(None, fn)
                blocks.append(cur)
                self.blocks[str(sum(1 for a in fn.args if a.name is None))] = cur
            if k == DBG:
                pending.append(self.parse_debug_record())
                continue
            if k == KW and toks[self.i] in ("uselistorder", "uselistorder_bb"):
                self._skip_uselistorder()
                continue
            inst = self.parse_instruction()
            if pending:
                for r in pending:
                    r.owner = inst
                inst.dbg_records = pending
                pending = []
            inst.parent = cur
            cur.instructions.append(inst)
        if pending:
            raise self.error("debug record not followed by an instruction")
        if self.fwd:
            key, f = next(iter(self.fwd.items()))
            raise ParseError(f"use of undefined value %{key}", self.text, self.starts[0],
                             self.line_offset)
        for b in blocks:
            if not b.instructions:
                raise self.error(f"block {b.name} is empty or never defined")
        for key, b in self.blocks.items():
            if b.parent is fn and b not in blocks:
                raise ParseError(f"use of undefined label %{key}", self.text, self.starts[0],
                                 self.line_offset)

    def _skip_uselistorder(self):
        self.i += 1
        while not (self.kinds[self.i] == PUNCT and self.toks[self.i] == "{"):
            self.i += 1
        self.skip_balanced()

    def parse_debug_record(self):
        kind = self.toks[self.i][5:]
        start = self.i
        self.i += 1
        self.parse_punct("(")
        head = self.text[self.starts[start]:self.ends[self.i - 1]]
        parts, ops = self.parse_template(stop_at_comma=False)
        self.parse_punct(")")
        return V.DebugRecord(kind, [head, *[p + 0 if type(p) is int else p for p in parts], ")"],
                             ops)

    # -- instructions ------------------------------------------------------------
    def parse_instruction(self) -> I.Instruction:
        key = None
        if self.kinds[self.i] == LOCAL:
            key = _unquote(self.toks[self.i][1:])
            self.i += 1
            self.parse_punct("=")
        if self.kinds[self.i] != KW:
            raise self.expected("an instruction")
        op = self.toks[self.i]
        self.i += 1
        m = _DISPATCH.get(op)
        if m is None:
            if op in I.BINARY_OPS:
                inst = self._binary(op)
            elif op in I.CAST_OPS:
                inst = self._cast(op)
            else:
                self.i -= 1
                raise self.expected("an instruction opcode")
        else:
            inst = m(self, op)
        self._parse_attachments(inst)
        if key is not None:
            if not key.isdigit():
                inst.name = key
            self.define(key, inst)
        return inst

    def _parse_attachments(self, inst):
        kinds, toks = self.kinds, self.toks
        while kinds[self.i] == PUNCT and toks[self.i] == "," and kinds[self.i + 1] == META:
            kind = toks[self.i + 1][1:]
            self.i += 2
            start = self.i
            if kinds[self.i] == META:
                self.i += 1
                if toks[self.i] == "(" and kinds[self.i] == PUNCT:
                    self.skip_balanced()
            elif toks[self.i] == "!":
                self.i += 1
                self.skip_balanced()
            else:
                raise self.expected("metadata")
            inst.metadata.append((kind, self.slice(start, self.i)))

    def _flags(self, allowed):
        out = []
        while self.kinds[self.i] == KW and self.toks[self.i] in allowed:
            out.append(self.toks[self.i])
            self.i += 1
        return out

    def _binary(self, op):
        flags = self._flags(FMF if op in I.FP_BINARY_OPS else _INT_FLAGS)
        ty = self.parse_type()
        a = self.parse_value(ty)
        self.parse_punct(",")
        b = self.parse_value(ty)
        return I.BinaryOp(op, a, b, flags)

    def _cast(self, op):
        flags = self._flags(_CAST_FLAGS)
        v = self.parse_typed_value()
        self.parse_kw("to")
        return I.Cast(op, v, self.parse_type(), flags)

    def _fneg(self, op):
        flags = self._flags(FMF)
        return I.UnaryOp(op, self.parse_typed_value(), flags)

    def _cmp(self, op):
        flags = self._flags(FMF if op == "fcmp" else {"samesign"})
        pred = self.toks[self.i]
        self.i += 1
        ty = self.parse_type()
        a = self.parse_value(ty)
        self.parse_punct(",")
        b = self.parse_value(ty)
        return (I.FCmp if op == "fcmp" else I.ICmp)(pred, a, b, flags)

    def _select(self, op):
        flags = self._flags(FMF)
        c = self.parse_typed_value()
        self.parse_punct(",")
        a = self.parse_typed_value()
        self.parse_punct(",")
        return I.Select(c, a, self.parse_typed_value(), flags)

    def _phi(self, op):
        flags = self._flags(FMF)
        ty = self.parse_type()
        phi = I.Phi(ty, (), flags)
        while True:
            self.parse_punct("[")
            v = self.parse_value(ty)
            self.parse_punct(",")
            if self.kinds[self.i] != LOCAL:
                raise self.expected("a block")
            self.i += 1
            b = self.lookup_block(self.toks[self.i - 1])
            self.parse_punct("]")
            phi.add_incoming(v, b)
            if not (self.toks[self.i] == "," and self.toks[self.i + 1] == "["):
                break
            self.i += 1
        return phi

    def _typed_list(self):
        ops = [self.parse_typed_value()]
        while self.toks[self.i] == "," and self.kinds[self.i + 1] != META:
            self.i += 1
            ops.append(self.parse_typed_value())
        return ops

    def _freeze(self, op):
        return I.Freeze(self.parse_typed_value())

    def _extractelement(self, op):
        return I.ExtractElement(*self._typed_list())

    def _insertelement(self, op):
        return I.InsertElement(*self._typed_list())

    def _shufflevector(self, op):
        return I.ShuffleVector(*self._typed_list())

    def _indices(self):
        out = []
        while self.toks[self.i] == "," and self.kinds[self.i + 1] == INT:
            out.append(int(self.toks[self.i + 1]))
            self.i += 2
        return out

    def _extractvalue(self, op):
        agg = self.parse_typed_value()
        return I.ExtractValue(agg, self._indices())

    def _insertvalue(self, op):
        agg = self.parse_typed_value()
        self.parse_punct(",")
        v = self.parse_typed_value()
        return I.InsertValue(agg, v, self._indices())

    def _align_opt(self):
        if self.toks[self.i] == "," and self.toks[self.i + 1] == "align":
            self.i += 2
            return self.parse_int()
        return None

    def _alloca(self, op):
        flags = self._flags({"inalloca", "swifterror"})
        ty = self.parse_type()
        count = align = None
        asp = 0
        while self.toks[self.i] == "," and self.kinds[self.i + 1] != META:
            self.i += 1
            if self.parse_optional_kw("align"):
                align = self.parse_int()
            elif self.parse_optional_kw("addrspace"):
                self.parse_punct("(")
                asp = self.parse_int()
                self.parse_punct(")")
            else:
                count = self.parse_typed_value()
        return I.Alloca(ty, count, align, flags, asp)

    def _atomic_tail(self):
        ss = None
        if self.toks[self.i] == "syncscope":
            s = self.i
            self.i += 1
            self.skip_balanced()
            ss = self.slice(s, self.i)
        ords = []
        while self.toks[self.i] in _ORDERINGS and self.kinds[self.i] == KW:
            ords.append(self.toks[self.i])
            self.i += 1
        return ss, ords

    def _load(self, op):
        atomic = self.parse_optional_kw("atomic")
        vol = self.parse_optional_kw("volatile")
        ty = self.parse_type()
        self.parse_punct(",")
        p = self.parse_typed_value()
        ss, ords = self._atomic_tail() if atomic else (None, [])
        return I.Load(ty, p, self._align_opt(), vol, ords[0] if ords else None, ss)

    def _store(self, op):
        atomic = self.parse_optional_kw("atomic")
        vol = self.parse_optional_kw("volatile")
        v = self.parse_typed_value()
        self.parse_punct(",")
        p = self.parse_typed_value()
        ss, ords = self._atomic_tail() if atomic else (None, [])
        return I.Store(v, p, self._align_opt(), vol, ords[0] if ords else None, ss)

    def _fence(self, op):
        ss, ords = self._atomic_tail()
        return I.Fence(ords[0], ss)

    def _cmpxchg(self, op):
        weak = self.parse_optional_kw("weak")
        vol = self.parse_optional_kw("volatile")
        p = self.parse_typed_value()
        self.parse_punct(",")
        c = self.parse_typed_value()
        self.parse_punct(",")
        n = self.parse_typed_value()
        ss, ords = self._atomic_tail()
        return I.CmpXchg(p, c, n, ords[0], ords[1], self._align_opt(), weak, vol, ss)

    def _atomicrmw(self, op):
        vol = self.parse_optional_kw("volatile")
        operation = self.toks[self.i]
        self.i += 1
        p = self.parse_typed_value()
        self.parse_punct(",")
        v = self.parse_typed_value()
        ss, ords = self._atomic_tail()
        return I.AtomicRMW(operation, p, v, ords[0], self._align_opt(), vol, ss)

    def _gep(self, op):
        flags = self._flags({"inbounds", "nuw", "nusw"})
        sty = self.parse_type()
        self.parse_punct(",")
        ops = self._typed_list()
        return I.GEP(sty, ops[0], ops[1:], flags)

    def _va_arg(self, op):
        v = self.parse_typed_value()
        self.parse_punct(",")
        return I.VAArg(v, self.parse_type())

    # calls
    def _call_parts(self):
        flags = self._flags(FMF)
        s = self.i
        while not self.at_type_start():
            if self.kinds[self.i] == EOF:
                raise self.expected("a call's return type")
            self.skip_balanced()
        ret_attrs = self.slice(s, self.i)
        ty = self.parse_type()
        asm_text = None
        if self.kinds[self.i] == KW and self.toks[self.i] == "asm":
            start = self.i
            self.i += 1
            while self.kinds[self.i] == KW:
                self.i += 1
            for _ in range(2):
                if self.kinds[self.i] != STR:
                    raise self.expected("an inline asm string")
                self.i += 1
                if _ == 0:
                    self.parse_punct(",")
            asm_text = self.slice(start, self.i)
            callee = None
        else:
            callee = self.parse_value(T.ptr)
        self.parse_punct("(")
        args, attrs = [], []
        if not self.parse_optional_punct(")"):
            while True:
                aty = self.parse_type()
                if aty is T.metadata:
                    attrs.append("")
                    args.append(self.parse_metadata_value())
                else:
                    attrs.append(self.parse_attr_text())
                    args.append(self.parse_value(aty))
                if not self.parse_optional_punct(","):
                    break
            self.parse_punct(")")
        fnty = ty if ty.is_function else T.FunctionType(ty, [a.type for a in args])
        if callee is None:
            callee = V.InlineAsm(fnty, asm_text)
        s = self.i
        while True:
            k = self.kinds[self.i]
            if k == ATTRGRP:  # LLVM prints call-site attributes as groups
                self.i += 1
            else:
                break
        fn_attrs = self.slice(s, self.i)
        bundles = []
        if self.parse_optional_punct("["):
            while True:
                tag = self.toks[self.i]
                self.i += 1
                self.parse_punct("(")
                vals = []
                if not self.parse_optional_punct(")"):
                    vals = self._typed_list_until(")")
                bundles.append((tag, vals))
                if not self.parse_optional_punct(","):
                    break
            self.parse_punct("]")
        return dict(flags=flags, ret_attrs=ret_attrs, arg_attrs=attrs, fn_attrs=fn_attrs,
                    bundles=bundles), fnty, callee, args

    def _typed_list_until(self, close):
        vals = [self.parse_typed_value()]
        while self.parse_optional_punct(","):
            vals.append(self.parse_typed_value())
        self.parse_punct(close)
        return vals

    def _call(self, op):
        tail = ""
        if op != "call":
            tail = op
            self.parse_kw("call")
        kw, fnty, callee, args = self._call_parts()
        return I.Call(fnty, callee, args, tail=tail, **kw)

    def _invoke(self, op):
        kw, fnty, callee, args = self._call_parts()
        self.parse_kw("to")
        normal = self.parse_label_ref()
        self.parse_kw("unwind")
        unwind = self.parse_label_ref()
        return I.Invoke(fnty, callee, args, normal, unwind, **kw)

    # terminators
    def _ret(self, op):
        if self.parse_optional_kw("void"):
            return I.Ret()
        return I.Ret(self.parse_typed_value())

    def _br(self, op):
        if self.toks[self.i] == "label":
            return I.Br(self.parse_label_ref())
        c = self.parse_typed_value()
        self.parse_punct(",")
        t = self.parse_label_ref()
        self.parse_punct(",")
        return I.Br(c, t, self.parse_label_ref())

    def _switch(self, op):
        c = self.parse_typed_value()
        self.parse_punct(",")
        sw = I.Switch(c, self.parse_label_ref())
        self.parse_punct("[")
        while not self.parse_optional_punct("]"):
            v = self.parse_typed_value()
            self.parse_punct(",")
            sw.add_case(v, self.parse_label_ref())
        return sw

    def _indirectbr(self, op):
        a = self.parse_typed_value()
        self.parse_punct(",")
        self.parse_punct("[")
        dests = []
        if not self.parse_optional_punct("]"):
            while True:
                dests.append(self.parse_label_ref())
                if not self.parse_optional_punct(","):
                    break
            self.parse_punct("]")
        return I.IndirectBr(a, dests)

    def _resume(self, op):
        return I.Resume(self.parse_typed_value())

    def _unreachable(self, op):
        return I.Unreachable()

    def _landingpad(self, op):
        ty = self.parse_type()
        lp = I.LandingPad(ty, cleanup=self.parse_optional_kw("cleanup"))
        while self.toks[self.i] in ("catch", "filter") and self.kinds[self.i] == KW:
            kind = self.toks[self.i]
            self.i += 1
            lp.add_clause(kind, self.parse_typed_value())
        return lp

    def _pad_parent(self):
        self.parse_kw("within")
        return self.parse_value(T.token)

    def _funclet(self, op):
        parent = self._pad_parent()
        self.parse_punct("[")
        args = []
        if not self.parse_optional_punct("]"):
            args = self._typed_list_until("]")
        return (I.CatchPad if op == "catchpad" else I.CleanupPad)(parent, args)

    def _unwind_dest(self):
        self.parse_kw("unwind")
        if self.parse_optional_kw("to"):
            self.parse_kw("caller")
            return None
        return self.parse_label_ref()

    def _catchswitch(self, op):
        parent = self._pad_parent()
        self.parse_punct("[")
        hs = []
        while True:
            hs.append(self.parse_label_ref())
            if not self.parse_optional_punct(","):
                break
        self.parse_punct("]")
        return I.CatchSwitch(parent, hs, self._unwind_dest())

    def _catchret(self, op):
        self.parse_kw("from")
        pad = self.parse_value(T.token)
        self.parse_kw("to")
        return I.CatchRet(pad, self.parse_label_ref())

    def _cleanupret(self, op):
        self.parse_kw("from")
        pad = self.parse_value(T.token)
        return I.CleanupRet(pad, self._unwind_dest())

    def _verbatim(self, op):
        """callbr and other rare instructions: text up to the end of the line, with holes."""
        start = self.i - 1
        line_end = self.text.find("\n", self.starts[start])
        if line_end < 0:
            line_end = len(self.text)
        j = self.i
        while self.starts[j] < line_end and self.kinds[j] != EOF:
            if self.kinds[j] == PUNCT and self.toks[j] == "," and self.kinds[j + 1] == META:
                break
            j += 1
        sub = Parser(self.module, self.text, 0, 0)
        sub.kinds, sub.toks = self.kinds[:j] + [EOF], self.toks[:j] + [""]
        sub.starts = self.starts[:j] + [self.ends[j - 1]]
        sub.ends = self.ends[:j] + [self.ends[j - 1]]
        sub.i = start
        sub.lookup_local = self.lookup_local
        sub.lookup_block = self.lookup_block
        parts, ops = sub.parse_template(stop_at_comma=False)
        self.i = j
        ty = T.void
        return I.VerbatimInst(op, ty, parts, ops, is_terminator=op in ("callbr",))


_INT_FLAGS = {"nuw", "nsw", "exact", "disjoint"}
_CAST_FLAGS = {"nuw", "nsw", "nneg"} | FMF


_DISPATCH = {
    "fneg": BodyParser._fneg, "icmp": BodyParser._cmp, "fcmp": BodyParser._cmp,
    "select": BodyParser._select, "phi": BodyParser._phi, "freeze": BodyParser._freeze,
    "extractelement": BodyParser._extractelement, "insertelement": BodyParser._insertelement,
    "shufflevector": BodyParser._shufflevector, "extractvalue": BodyParser._extractvalue,
    "insertvalue": BodyParser._insertvalue, "alloca": BodyParser._alloca,
    "load": BodyParser._load, "store": BodyParser._store, "fence": BodyParser._fence,
    "cmpxchg": BodyParser._cmpxchg, "atomicrmw": BodyParser._atomicrmw,
    "getelementptr": BodyParser._gep, "va_arg": BodyParser._va_arg,
    "call": BodyParser._call, "tail": BodyParser._call, "musttail": BodyParser._call,
    "notail": BodyParser._call, "invoke": BodyParser._invoke, "ret": BodyParser._ret,
    "br": BodyParser._br, "switch": BodyParser._switch, "indirectbr": BodyParser._indirectbr,
    "resume": BodyParser._resume, "unreachable": BodyParser._unreachable,
    "landingpad": BodyParser._landingpad, "catchpad": BodyParser._funclet,
    "cleanuppad": BodyParser._funclet, "catchswitch": BodyParser._catchswitch,
    "catchret": BodyParser._catchret, "cleanupret": BodyParser._cleanupret,
    "callbr": BodyParser._verbatim,
}


BODIES_PARSED = 0   # function bodies materialized so far in this process (``-v`` reports it)


def parse_function_body(fn: Function) -> None:
    """Materialize a lazily parsed body (called by ``fn.blocks``)."""
    global BODIES_PARSED
    BODIES_PARSED += 1
    text, start, end, line = fn._lazy_body
    fn._lazy_body = None
    p = BodyParser(fn, text, start, end, 0)
    try:
        p.parse_body()
    except Exception:
        fn._blocks = []
        fn._lazy_body = (text, start, end, line)
        if fn.parent is not None:
            fn.parent._users_parsed.clear()
        raise
    mod = fn.parent
    if mod is not None and mod._pending_blockaddrs:
        _resolve_blockaddrs(mod)


def _resolve_blockaddrs(mod):
    pend, mod._pending_blockaddrs = mod._pending_blockaddrs, []
    for fn, ph in pend:
        if ph._uses and isinstance(fn, Function):
            key = ph.key
            blocks = fn.blocks
            target = None
            n = sum(1 for a in fn.args if a.name is None)
            for b in blocks:
                if b.name is None:
                    if str(n) == key:
                        target = b
                    n += 1
                    for i in b.instructions:
                        if i.name is None and not i.type.is_void:
                            n += 1
                else:
                    if b.name == key:
                        target = b
                    for i in b.instructions:
                        if i.name is None and not i.type.is_void:
                            n += 1
                if target is not None:
                    break
            if target is None:
                raise ParseError(f"blockaddress refers to unknown block %{key} in @{fn.name}")
            ph.replace_all_uses_with(target)
