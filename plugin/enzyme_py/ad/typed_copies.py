"""Integer copies of small structs that hold floats, split into typed field accesses.

Clang (and LLVM's instcombine, on a small ``memcpy``) copies an 8-byte struct as one
``i64``: ``Item a = b;`` for ``struct { float v; int idx; }``, a swap of two
``struct { float x, y; }`` points, the insertion sort of (value, index) records; and at
-O1+ it reads one field out of such an integer (``trunc``, ``lshr`` by 32, then
``bitcast`` to float).  Derivatives follow the types of the values moved, and an
``i64`` says nothing about the float inside: the derivative went elsewhere or nowhere
(round R; real Enzyme 15 is right on most of these).  (A copy whose integer is exactly
one float of its width -- a ``double`` moved as an ``i64`` -- the generators already
move as that float where the store follows the load in its block; one stored in other
blocks -- ``push_back(Wire{i, std::bit_cast<uint64_t>(x[i])})``, the store on either
side of the growth branch -- is made a load and stores of that float here.)

Before differentiation, in the private copies about to be differentiated, an integer
``load`` whose every use is a ``store`` of it or the extraction of one field becomes one
typed load per field where the integer was loaded, one store per field where it was
stored, and the extracted fields' uses take the typed loads -- the same bytes, read and
written at the same points, now typed.  The fields come from the byte-offset analysis
(``analysis.typetree``: floats, integers and pointers at known offsets, at both ends
of a copy; the integer copies themselves do not count, nor, where a float is accessed,
a field's declared integer type: a float's bits ``memcpy``'d into a ``uint32_t``) and
from the extractions; at
least one float narrower than the integer must be among them (or the integer is one
float, stored in other blocks than its load).  Bytes of unknown kind
leave the copy as it was (the generators' own checks then apply).  Little-endian
targets only.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import BinaryOp, Cast, Load, ShuffleVector, Store
from ..ir.values import ConstantAggregate, ConstantInt, Poison, Undef

__all__ = ["split_integer_copies", "retype_float_lanes", "retype_float_merges",
           "retype_float_stores", "retype_constant_stores",
           "retype_pointer_moves",
           "replace_with_floats", "fold_bitcast_pairs"]

_FIELD = {"float": (T.float, 4), "double": (T.double, 8), "int": (T.i32, 4),
          "ptr": (T.ptr, 8)}


def _fields(types, ptrs, nbytes, exclude):
    """[(offset, type)] covering ``nbytes`` at each of ``ptrs``, or None."""
    out, off = [], 0
    while off < nbytes:
        for kind in ("double", "ptr", "float", "int"):
            ty, n = _FIELD[kind]
            if off % n or off + n > nbytes:
                continue
            got = set()
            for p in ptrs:
                got |= types.kinds(p, off, n, exclude)
            if kind in ("double", "float") and got == {kind, "int"}:
                # a float where the field is declared integer: a float's bits memcpy'd
                # into a ``uint32_t`` field -- the float it holds, where the program's own
                # accesses there, and where integer copies take them, say so
                # (``typetree.copied_kinds``)
                got = set()
                for p in ptrs:
                    got |= types.copied_kinds(p, n, offset=off)
            if got == {kind} or kind == "int" and got and got <= {"int", "i8", "i16"}:
                out.append((off, ty))
                off += n
                break
        else:
            return None
    return out


def _extractions(ld):
    """The uses of the integer load ``ld`` that take one field out of it: ``trunc``
    (offset 0) or ``trunc (lshr x, 8k)`` (offset k), then perhaps ``bitcast`` to a float
    of the same width -- as [(the instruction giving the field, offset, type, the
    instructions to erase)]; the stores of ``ld`` as a value; or None when some use is
    neither."""
    fields, stores = [], []
    for u in ld.uses:
        user = u.user
        if isinstance(user, Store) and u.index == 0 and not user.volatile \
                and not user.ordering:
            stores.append(user)
            continue
        off, chain = 0, []
        if isinstance(user, BinaryOp) and user.opcode == "lshr" \
                and isinstance(user.operand(1), ConstantInt) and user.operand(1).value % 8 == 0:
            off, chain = user.operand(1).value // 8, [user]
            truncs = [w.user for w in user.uses]
        else:
            truncs = [user]
        for t in truncs:
            if not (isinstance(t, Cast) and t.opcode == "trunc"):
                return None
            uses = list(t.uses)
            if len(uses) == 1 and isinstance(uses[0].user, Cast) \
                    and uses[0].user.opcode == "bitcast" and uses[0].user.type.is_float:
                bc = uses[0].user
                fields.append((bc, off, bc.type, [bc, t]))
            else:
                fields.append((t, off, t.type, [t]))
        if chain and truncs:
            fields[-1][3].extend(chain)
    return fields, stores


def _not_a_float_there(types, src, off, ty, dl, exclude) -> bool:
    n = dl.store_size(ty)
    got = types.kinds(src, off, n, exclude)
    return bool(off % n or got and got != {{4: "float", 8: "double"}.get(n)})


def _candidates(fn):
    for ld in fn.instructions():
        if isinstance(ld, Load) and not ld.volatile and not ld.ordering and ld.type.is_int \
                and ld.type.width in (64, 128) and ld.uses:
            got = _extractions(ld)
            if got is not None:
                yield ld, got[0], got[1]


def _split(ld, extracted, stores, fields, module):
    from .emit import Emitter
    e = Emitter(module)
    src = ld.operand(0)
    e.position_before(ld)
    e.debug_loc = ld.get_metadata("dbg")
    loaded = {}

    def field(off, ty):
        if (off, ty) not in loaded:
            p = e.gep(T.i8, src, [ConstantInt(T.i64, off)], inbounds=True) if off else src
            loaded[(off, ty)] = e.load(ty, p, align=_align(ld.align or 1, off, ty, module))
        return loaded[(off, ty)]

    for off, ty in fields:
        field(off, ty)
    for end, off, ty, chain in extracted:
        same = next((v for (o, t), v in loaded.items() if o == off
                     and module.datalayout.store_size(t) == module.datalayout.store_size(ty)),
                    None)
        v = field(off, ty) if same is None else same
        if v.type != ty:
            e.position_before(ld)
            v = e.cast("bitcast", v, ty)
        end.replace_all_uses_with(v)
        for i in chain:             # the bitcast, the trunc, then the shift
            if not i.uses:
                i.erase()
    for st in stores:
        dst = st.operand(1)
        e.position_before(st)
        e.debug_loc = st.get_metadata("dbg")
        for off, ty in fields:
            q = e.gep(T.i8, dst, [ConstantInt(T.i64, off)], inbounds=True) if off else dst
            e.store(field(off, ty), q, align=_align(st.align or 1, off, ty, module))
        st.erase()
    if not ld.uses:
        ld.erase()


def _align(base, off, ty, module):
    n = module.datalayout.store_size(ty)
    a = base
    while a > 1 and off % a:
        a //= 2
    return min(a, n)


def split_integer_copies(module, functions) -> int:
    """Split the integer copies of float-holding structs in ``functions`` (module
    docstring); return how many loads were split.  Uses the byte-offset analysis of the
    module as it stands; the caller builds it again afterwards."""
    from ..analysis.typetree import MemoryTypes
    if not module.datalayout.little_endian:
        return 0
    found = [c for fn in functions for c in _candidates(fn)]
    if not found:
        return 0
    types = MemoryTypes.of(module, [v for ld, _, sts in found
                                    for v in [ld.operand(0)] + [s.operand(1) for s in sts]])
    dl = module.datalayout
    # the integer copies say nothing about what the bytes are: none counts (a swap's two
    # copies would each see the other's i64 as an integer in the same bytes)
    copies = tuple(x for ld, _, sts in found for x in [ld] + sts)
    todo = []
    for ld, extracted, stores in found:
        nbytes = ld.type.width // 8
        fields = []
        if stores:
            fields = _fields(types, [ld.operand(0)] + [s.operand(1) for s in stores],
                             nbytes, copies)
            if fields is None:
                continue
            starts = {off: ty for off, ty in fields}
            if any(starts.get(off) is None or dl.store_size(starts[off]) != dl.store_size(ty)
                   for _, off, ty, _ in extracted):
                continue
        # a float taken out of the integer must start on its own boundary and be what
        # the memory holds there, where that is known (``(bits >> 16)`` as a float
        # straddles two: left alone, and refused)
        if any(ty.is_float and _not_a_float_there(types, ld.operand(0), off, ty, dl, copies)
               for _, off, ty, _ in extracted):
            continue
        narrow = [ty for _, ty in fields] + [ty for _, _, ty, _ in extracted]
        whole = len(fields) == 1 and fields[0][1].is_float and not extracted \
            and any(st.parent is not ld.parent for st in stores)
        if not whole and not any(ty.is_float and dl.store_size(ty) < nbytes for ty in narrow):
            continue
        todo.append((ld, extracted, stores, fields))
    for ld, extracted, stores, fields in todo:
        _split(ld, extracted, stores, fields, module)
    return len(todo)


# ------------------------------------------------------------------------------------
# Integer constants stored over floats.  LLVM stores a float constant as the integer of
# its bits where it only moves bytes (``L[i*n+j] = 0.0`` of a zeroing loop, once
# unrolled: ``store i64 0``; a vectorised zeroing: ``store <2 x i64> zeroinitializer``).
# An integer store says nothing to the generators, so the old value's derivative stayed
# in the shadow: the reverse sweep carried the stale adjoint of the overwritten double
# on, forward mode its stale tangent (round AR, a TinyEKF's upper triangle zeroed:
# dx = 1 for 0 at -O2, silently).  Where the byte-offset analysis says the memory holds
# floats of the integer's width (and nothing else), such a store stores the float
# constant of the same bits -- an i64 over two floats (`*v = DIR0` of a `{float x, y}`
# constant, round AW) the two floats.

def _float_constant(c, fty):
    """The ``fty`` constant with the bits of the integer constant ``c``, or None."""
    import struct
    from ..ir.values import ConstantFP
    bits = c.value & ((1 << c.type.width) - 1)
    if fty is T.double:
        return ConstantFP(fty, struct.unpack("<d", bits.to_bytes(8, "little"))[0],
                          text=f"0x{bits:016X}")
    x = struct.unpack("<f", bits.to_bytes(4, "little"))[0]
    if x != x:
        return None     # (a NaN payload: not spelled here)
    return ConstantFP(fty, x)


def _float_pair(c):
    """``<2 x float>`` and the constant of its bits for the ``i64`` constant ``c``."""
    if not isinstance(c, ConstantInt):
        return None, None
    vty = T.VectorType(T.float, 2)
    bits = c.value & ((1 << 64) - 1)
    lanes = [_float_constant(ConstantInt(T.i32, (bits >> s) & 0xFFFFFFFF), T.float)
             for s in (0, 32)]
    return (vty, None) if None in lanes else (vty, ConstantAggregate(vty, lanes))


def _float_of_constant(c):
    """The float type and constant with the same bits as the integer (or integer vector)
    constant ``c`` of 32- or 64-bit elements, or None."""
    from ..ir.values import ZeroInit
    ty = c.type
    el = ty.element if ty.is_vector else ty
    if not el.is_int or el.width not in (32, 64):
        return None
    fel = T.double if el.width == 64 else T.float
    if not ty.is_vector:
        return (fel, _float_constant(c, fel)) if isinstance(c, ConstantInt) else None
    vty = T.VectorType(fel, ty.count)
    if isinstance(c, ZeroInit):
        return vty, ZeroInit(vty)
    if isinstance(c, ConstantAggregate) and all(isinstance(x, ConstantInt) for x in c.operands):
        lanes = [_float_constant(x, fel) for x in c.operands]
        return None if None in lanes else (vty, ConstantAggregate(vty, lanes))
    return None


def retype_constant_stores(module, functions) -> int:
    """Store as floats the integer constants ``functions`` store over floats of their
    width (see above); return how many stores were retyped."""
    from ..analysis.typetree import MemoryTypes
    if not module.datalayout.little_endian:
        return 0
    found = [(st, got) for fn in functions for st in fn.instructions()
             if isinstance(st, Store) and not st.volatile and not st.ordering
             for got in [_float_of_constant(st.operand(0))] if got is not None]
    if not found:
        return 0
    from ..analysis.globals import global_base
    from ..analysis.types import memory_kinds, scalar_kinds
    stores = tuple(st for st, _ in found)
    dl = module.datalayout
    n = 0
    for st, (fty, c) in found:
        el = fty.element if fty.is_vector else fty
        p = st.operand(1)
        # what the object holds (its typed accesses); where it holds other kinds too
        # (a struct), the byte-offset analysis says what these bytes hold
        kinds = memory_kinds([p], exclude=st)
        g = global_base(p)
        if g is not None and not g.is_declaration:     # (and a global's declared type)
            kinds |= scalar_kinds(g.value_type, set())
        if el.kind not in kinds and fty == T.double and "float" in kinds:
            # two floats stored as one i64 (`*v = DIR0` of a `{float x, y}` constant)
            fty, c = _float_pair(st.operand(0))
            el = T.float
        if el.kind not in kinds or c is None:
            continue
        if kinds != {el.kind} and MemoryTypes.of(module, [p]).kinds(
                p, 0, dl.store_size(fty), stores) != {el.kind}:
            continue
        st.set_operand(0, c)
        st.metadata = [m for m in st.metadata if m[0] != "tbaa"]
        n += 1
    return n


# ------------------------------------------------------------------------------------
# Vectors of floats moved as integer lanes.  Eigen's matrix-product kernel broadcasts a
# double with SSE's movddup, which LLVM spells ``load <4 x i32>``, ``shufflevector <0, 1,
# 0, 1>`` (the two halves of double 0, twice), ``bitcast to <2 x double>``: the same
# doubles, moved as integers -- no derivative follows them (the product's gradient was
# off, silently).  ``retype_float_lanes`` gives such code its float type back: a shuffle
# of integer lanes that moves whole floats (aligned groups of lanes, kept together) and
# is only bitcast to a float vector becomes a shuffle of that float vector, and an
# integer load that is bitcast to one float type -- perhaps also stored as it is (a copy
# loop with SSE's integer loads, ``_mm_loadu_si128`` over doubles) -- becomes a load
# of that type: the stores store the floats, other uses (an integer compare of the
# bits) take them bitcast back.


def _float_vector(n_bytes, like):
    """The float vector type of ``n_bytes`` per lane (4: float, 8: double) with the
    total size of the vector type ``like``, or None."""
    el = {4: T.float, 8: T.double}.get(n_bytes)
    total = like.count * like.element.width // 8
    if el is None or total % n_bytes:
        return None
    return T.VectorType(el, total // n_bytes)


def _only_bitcast_to(v, others=False):
    """The one float (or float vector) type every use of ``v`` bitcasts it to, or None
    (``others``: other uses are allowed besides, at least one bitcast is needed)."""
    ty = None
    for u in v.uses:
        c = u.user
        if not (isinstance(c, Cast) and c.opcode == "bitcast"):
            if others:
                continue
            return None
        t = c.type
        if not (t.is_float or t.is_vector and t.element.is_float) or ty not in (None, t):
            return None
        ty = t
    return ty


def _grouped(mask, g):
    """``mask`` (lane indices, -1 undefined) as indices of groups of ``g`` lanes, when it
    moves whole aligned groups; else None."""
    out = []
    for k in range(0, len(mask), g):
        part = mask[k:k + g]
        if all(m < 0 for m in part):
            out.append(-1)
            continue
        if part[0] < 0 or part[0] % g or part != list(range(part[0], part[0] + g)):
            return None
        out.append(part[0] // g)
    return out


def _mask_of(sv):
    m = sv.operand(2)
    n = sv.type.count
    if isinstance(m, (Undef, Poison)):
        return [-1] * n
    from ..ir.values import ZeroInit
    if isinstance(m, ZeroInit):
        return [0] * n
    if isinstance(m, ConstantAggregate):
        return [o.value if isinstance(o, ConstantInt) else -1 for o in m.operands]
    return None


def _retype_shuffle(sv, module):
    ty = _only_bitcast_to(sv)
    it = sv.type
    if ty is None or not ty.is_vector or not it.element.is_int:
        return False
    fb = ty.element.width // 8 if ty.element.is_float else None
    g = (fb * 8) // it.element.width if fb else 0
    mask = _mask_of(sv)
    src_t = sv.operand(0).type
    if not g or mask is None or (fb * 8) % it.element.width or src_t.count % g:
        return False
    grouped = _grouped(mask, g)
    ft = _float_vector(fb, src_t)
    if grouped is None or ft is None:
        return False
    from .emit import Emitter
    e = Emitter(module)
    e.position_before(sv)
    e.debug_loc = sv.get_metadata("dbg")
    a, b = (e.cast("bitcast", o, ft) if not isinstance(o, (Undef, Poison)) else Poison(ft)
            for o in sv.operands[:2])
    from .simd import lane_mask
    replace_with_floats(sv, e.shufflevector(a, b, lane_mask(grouped)))
    return True


def replace_with_floats(v, new):
    """The bitcasts of ``v`` to ``new``'s type take ``new``; stores of ``v`` store
    ``new``, and its other uses (an integer compare of the bits) a bitcast of ``new``
    back; ``v`` goes."""
    back = None
    for u in list(v.uses):
        c = u.user
        if isinstance(c, Cast) and c.opcode == "bitcast" and c.type == new.type:
            c.replace_all_uses_with(new)
            c.erase()
        elif isinstance(c, Store) and u.index == 0:
            c.set_operand(0, new)
            c.metadata = [m for m in c.metadata if m[0] != "tbaa"]
        else:
            if back is None:
                from .emit import Emitter
                e = Emitter(new.parent.parent.parent)
                e.position_after(new)
                back = e.cast("bitcast", new, v.type)
            c.set_operand(u.index, back)
    v.erase()


def _retype_load(ld, module):
    ty = _only_bitcast_to(ld, others=True)
    dl = module.datalayout
    if ty is None or ld.volatile or ld.ordering or dl.store_size(ty) != dl.store_size(ld.type):
        return False
    from .emit import Emitter
    e = Emitter(module)
    e.position_before(ld)
    new = e.load(ty, ld.operand(0), align=ld.align)
    # (not its TBAA tag: an integer's, on what is now a float load)
    new.metadata = [m for m in ld.metadata if m[0] != "tbaa"]
    replace_with_floats(ld, new)
    return True


def fold_bitcast_pairs(fn) -> None:
    """``bitcast (bitcast x to I) to F`` where x is already an F: x."""
    for c in list(fn.instructions()):
        if isinstance(c, Cast) and c.opcode == "bitcast" and c.parent is not None:
            x = c.operand(0)
            if isinstance(x, Cast) and x.opcode == "bitcast" and x.operand(0).type == c.type:
                c.replace_all_uses_with(x.operand(0))
                c.erase()
                if not x.uses:
                    x.erase()


def retype_float_lanes(fn) -> int:
    """Give the integer shuffles and loads of ``fn`` (a private copy about to be
    differentiated) that move floats their float types (see above); return how many
    were rewritten."""
    module = fn.parent
    n = 0
    for sv in [i for i in fn.instructions() if isinstance(i, ShuffleVector)]:
        if sv.parent is not None and sv.type.element.is_int and _retype_shuffle(sv, module):
            n += 1
    if n:
        fold_bitcast_pairs(fn)
    for ld in [i for i in fn.instructions() if isinstance(i, Load)]:
        if ld.parent is not None and (ld.type.is_int or ld.type.is_vector
                                      and ld.type.element.is_int) \
                and _retype_load(ld, module):
            n += 1
    return n


# Floats merged as integers.  A value kept as its bits (a NaN-boxed interpreter's
# ``uint64_t`` slot, a ``union { double d; uint64_t u; }`` assigned on two paths) reaches
# a phi or select as an ``i64`` made by ``bitcast`` from a double, and leaves it by a
# ``bitcast`` back: the derivative, which follows floats, did not cross the merge (a
# gradient of 0, silently).  Where every value merged is such a bitcast (or a constant,
# or another such merge), the merges become merges of the floats; their bitcasts back
# and stores take the float, their other uses (a tag test on the bits) a bitcast of it.


def retype_float_stores(fn) -> int:
    """``store (bitcast F x to iN), p`` (a double boxed into a ``uint64_t`` slot) stores
    ``x`` itself: the same bytes, now typed, so its derivative follows into the
    memory's shadow (and an integer load of it, only bitcast back, is retyped by
    ``retype_float_lanes``).  Returns how many stores were retyped."""
    n = 0
    for st in [i for i in fn.instructions() if isinstance(i, Store)]:
        v = st.operand(0)
        if isinstance(v, Cast) and v.opcode == "bitcast" and v.type.is_int \
                and v.operand(0).type.is_float and not st.volatile and not st.ordering:
            st.set_operand(0, v.operand(0))
            st.metadata = [m for m in st.metadata if m[0] != "tbaa"]
            if not v.uses:
                v.erase()
            n += 1
    return n


def retype_float_merges(fn) -> int:
    """Merge as floats the integer phis and selects of ``fn`` that only choose between
    a float's bits (see above); return how many webs of merges were retyped."""
    from ..ir.instructions import Phi, Select
    n = 0
    for c in list(fn.instructions()):
        if c.parent is None:
            continue
        if isinstance(c, Cast) and c.opcode == "bitcast" and c.type.is_float \
                and c.type.kind in ("double", "float"):
            m, fty = c.operand(0), c.type
        elif isinstance(c, Store) and not c.volatile and not c.ordering:
            # (the merge stored as the integer it is: a union's double chosen on one
            # path and its char on the other, kept in an array and read back as a
            # double elsewhere)
            m, fty = c.operand(0), _FLOAT_OF_WIDTH.get(getattr(c.operand(0).type, "width", 0))
        else:
            continue
        if isinstance(m, (Phi, Select)) and m.parent is not None and m.type.is_int \
                and fty is not None:
            web = _float_merge_web(m, fty)
            if web is not None:
                _retype_merges(web, fty)
                n += 1
    return n


_FLOAT_OF_WIDTH = {64: T.double, 32: T.float}


def _float_merge_web(start, fty, limit=64):
    """The phis and selects ``start`` is merged with that only move ``fty``'s bits,
    or None: each merges bitcasts of ``fty`` values, constants, integer loads whose
    TBAA tag says they read an ``fty`` (a double loaded as an ``i64`` because it is
    only moved), or another such merge -- at least one of them not a constant."""
    from ..analysis.types import tbaa_kind
    from ..ir.instructions import Phi, Select
    web, work, leaves = [], [start], 0
    while work:
        v = work.pop()
        if v in web:
            continue
        web.append(v)
        if len(web) > limit:
            return None
        for x in v.merged:
            if isinstance(x, (Phi, Select)) and x.type == v.type:
                work.append(x)
            elif isinstance(x, Cast) and x.opcode == "bitcast" and x.operand(0).type == fty:
                leaves += 1
            elif isinstance(x, Load) and not x.volatile and not x.ordering \
                    and tbaa_kind(x) == fty.kind:
                leaves += 1
            elif not isinstance(x, (ConstantInt, Undef, Poison)):
                return None
        for u in v.uses:
            user = u.user
            if isinstance(user, (Phi, Select)) and user.type == v.type \
                    and not (isinstance(user, Select) and u.index == 0):
                work.append(user)
            elif isinstance(user, (Phi, Select)):
                return None     # (merged with something else)
            # any other use (a NaN-box's tag test ``v >> 48``, ``v == CANONICAL_NAN``)
            # reads the float's bits back: a bitcast of the float merge
    return web if leaves else None


def _float_of_bits(x, fty, before):
    """The ``fty`` value whose bits the integer ``x`` (a bitcast of one, a load tagged as
    reading one, a constant) is, made before the instruction ``before`` where it takes
    an instruction."""
    from ..ir.values import ConstantFP
    if isinstance(x, Cast):
        return x.operand(0)
    if isinstance(x, Load):
        if x.type != fty:           # (read as the float; its bits for its other uses)
            bits = Cast("bitcast", x, x.type)
            bits.insert_after(x)
            x.replace_all_uses_with(bits)
            bits.set_operand(0, x)
            x.type = fty
        return x
    if isinstance(x, (Undef, Poison)):
        return type(x)(fty)
    bits = x.value & ((1 << x.type.width) - 1)
    if fty.kind == "double":
        return ConstantFP(fty, text=f"0x{bits:016X}")
    from .emit import Emitter
    e = Emitter(before.parent.parent.parent)
    e.position_before(before)
    return e.cast("bitcast", x, fty)


def _retype_merges(web, fty) -> None:
    from ..ir.instructions import Phi, Select
    new = {}
    for v in web:
        n = Phi(fty) if isinstance(v, Phi) else Select(v.operand(0), Poison(fty), Poison(fty))
        n.insert_before(v)
        new[v] = n
    for v, n in new.items():
        if isinstance(v, Phi):
            for x, b in v.incoming:
                n.add_incoming(new.get(x) or _float_of_bits(x, fty, b.terminator), b)
        else:
            for k in (1, 2):
                x = v.operand(k)
                n.set_operand(k, new.get(x) or _float_of_bits(x, fty, n))
    for v, n in new.items():
        back = None
        for u in list(v.uses):
            user = u.user
            if user in new or getattr(user, "is_debug_use", False) or user.parent is None:
                continue    # (a debug record of the merge: it goes to poison below)
            if isinstance(user, Cast) and user.opcode == "bitcast" and user.type == fty:
                user.replace_all_uses_with(n)
                user.erase()
                continue
            if isinstance(user, Store) and u.index == 0 and not user.volatile \
                    and not user.ordering:
                user.set_operand(0, n)      # the bits written back: the float
                user.metadata = [m for m in user.metadata if m[0] != "tbaa"]
                continue
            if back is None:
                from .emit import Emitter
                e = Emitter(n.parent.parent.parent)
                blk = n.parent.instructions
                if isinstance(n, Phi):      # (after the block's phis)
                    e.position_before(next(i for i in blk[blk.index(n):]
                                           if not isinstance(i, Phi)))
                else:
                    e.position_after(n)
                back = e.cast("bitcast", n, v.type)
            user.set_operand(u.index, back)
    leaves = {x for v in web for x in v.operands if isinstance(x, Cast)}
    for v in web:
        v.replace_all_uses_with(Poison(v.type))
    for v in web:
        v.erase()
    for x in leaves:
        if x.parent is not None and not x.uses:
            x.erase()


# Pointers moved as integers.  A C++ view holding one reference (Eigen's ``Transpose``,
# any ``struct { const T &m; }``) is trivially copyable: its copy is an 8-byte memcpy,
# which instcombine turns into ``load i64`` + ``store i64`` before it is inlined; SROA
# then reads the pointer back out of the integer with ``inttoptr``.  Activity follows
# shadowed pointers through memory by their type, so the pointer out of ``inttoptr``
# had no shadow: what was read through it counted as constant -- the gradient of
# ``A * A.transpose()`` was half of what it is at -O1..-O3, silently.  Before
# differentiation such a load, when it is only made a pointer, becomes a pointer load,
# and a ``ptrtoint`` stored as an integer is stored as the pointer: the same bytes, read
# and written at the same points, now typed.  (An integer that is also used as one -- a
# pointer to member function, tested for its virtual bit -- stays an integer.)


def _pointer_sized(ty, module) -> bool:
    return ty.is_int and ty.width == 8 * module.datalayout.store_size(T.ptr)


def _pointer_load_for(ld, module):
    """A pointer load of the bytes the integer load ``ld`` reads, placed before it (its
    TBAA tag, which names an integer type, dropped)."""
    from .emit import Emitter
    e = Emitter(module)
    e.position_before(ld)
    new = e.load(T.ptr, ld.operand(0), align=ld.align)
    new.metadata = [m for m in ld.metadata if m[0] != "tbaa"]
    return new


def _retype_pointer_load(ld, module) -> bool:
    casts = [u.user for u in ld.uses if isinstance(u.user, Cast)
             and u.user.opcode == "inttoptr" and u.user.type == T.ptr]
    if not casts or len(casts) != len(ld.uses) or ld.volatile or ld.ordering \
            or not _pointer_sized(ld.type, module):
        return False
    new = _pointer_load_for(ld, module)
    for c in casts:
        c.replace_all_uses_with(new)
        c.erase()
    ld.erase()
    return True


def _returned_argument(p):
    """The argument a call returns when the defined function called returns that
    parameter everywhere (an iterator's ``operator++`` returning ``*this``: libc++'s
    ``__upper_bound`` copies ``*++it``), else ``p``."""
    from ..ir.instructions import Call, Ret
    f = p.called_function if isinstance(p, Call) else None
    if f is None or f.is_declaration:
        return p
    rets = [b.terminator.value for b in f.blocks if isinstance(b.terminator, Ret)]
    if rets and all(getattr(r, "is_argument", False) for r in rets) \
            and len({r.index for r in rets}) == 1 and rets[0].index < len(p.args):
        return p.args[rets[0].index]
    return p


def _retype_pointer_copy(ld, module) -> bool:
    """An iterator copied into another as an integer (``load i64`` only stored, from and
    to a pointer field by both objects' declared layout: libstdc++'s
    ``__upper_bound`` at -O0, ``__middle = __first``): a pointer load and stores."""
    from ..analysis.types import layout_kinds
    dl = module.datalayout
    stores = [u.user for u in ld.uses]
    if not stores or ld.volatile or ld.ordering or not _pointer_sized(ld.type, module) \
            or not all(isinstance(st, Store) and st.operand(0) is ld and st.operand(1) is not ld
                       and not st.volatile and not st.ordering for st in stores) \
            or layout_kinds(_returned_argument(ld.operand(0)), dl.store_size(T.ptr),
                            dl) != {"ptr"} \
            or any(layout_kinds(_returned_argument(st.operand(1)), dl.store_size(T.ptr),
                                dl) != {"ptr"} for st in stores):
        return False
    new = _pointer_load_for(ld, module)
    for st in stores:
        st.set_operand(0, new)
        st.metadata = [m for m in st.metadata if m[0] != "tbaa"]
    ld.erase()
    return True


def _retype_pointer_store(st, module) -> bool:
    x = st.operand(0)
    if not (isinstance(x, Cast) and x.opcode == "ptrtoint" and x.operand(0).type == T.ptr
            and _pointer_sized(x.type, module)) or st.volatile or st.ordering:
        return False
    st.set_operand(0, x.operand(0))
    st.metadata = [m for m in st.metadata if m[0] != "tbaa"]
    if not x.uses:
        x.erase()
    return True


def _retype_pointer_lane(c, module) -> bool:
    """``inttoptr (extractelement (bitcast (load <N x T> p)), k)``: a pointer read out of
    one lane of a vector load (clang -O2 copies Eigen's ``2.0 * v`` evaluator, ``{double,
    const Vector2d *}``, as a ``<2 x double>``, and takes the vector back out of lane 1):
    a pointer load of the lane's bytes, placed right after the vector load (the same
    bytes at the same point), for the ``inttoptr``."""
    from ..ir.instructions import ExtractElement
    from ..ir.values import ConstantInt
    from .emit import Emitter
    x = c.operand(0)
    if not (isinstance(x, ExtractElement) and isinstance(x.operand(1), ConstantInt)
            and _pointer_sized(x.type, module)):
        return False
    v = x.operand(0)
    if isinstance(v, Cast) and v.opcode == "bitcast":
        v = v.operand(0)
    dl = module.datalayout
    if not (isinstance(v, Load) and v.type.is_vector) or v.volatile or v.ordering \
            or dl.store_size(v.type) != dl.store_size(x.operand(0).type):
        return False
    e = Emitter(module)
    e.position_after(v)
    at = x.operand(1).value * (x.type.width // 8)
    new = e.load(T.ptr, e.gep_bytes(v.operand(0), at) if at else v.operand(0))
    c.replace_all_uses_with(new)
    c.erase()
    return True


def retype_pointer_moves(fn) -> int:
    """Give the pointer-sized integer loads of ``fn`` (a private copy about to be
    differentiated) that only ``inttoptr`` their value, and the stores of a ``ptrtoint``,
    the pointer type, and read a pointer taken out of a vector load's lane from memory
    (see above); return how many were rewritten."""
    module = fn.parent
    n = 0
    for i in list(fn.instructions()):
        if i.parent is None:
            continue    # (erased by an earlier rewrite of this loop)
        if isinstance(i, Load) and i.type.is_int:
            n += _retype_pointer_load(i, module) or _retype_pointer_copy(i, module)
        elif isinstance(i, Store):
            n += _retype_pointer_store(i, module)
        elif isinstance(i, Cast) and i.opcode == "inttoptr" and i.type == T.ptr:
            n += _retype_pointer_lane(i, module)
    return n
