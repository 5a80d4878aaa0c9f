"""Where the reverse sweep finds the values it cannot recompute (Enzyme's cache design).

A value the reverse sweep needs is stored once per execution of its definition, at a
*level*: the innermost loop containing both the definition and the block whose
reverse needs it (``None``: outside every loop).  Each level has a record layout:

* level ``None``: the *frame*, a fixed-size record per call of the function.  The
  augmented forward function keeps it in an ``alloca`` and pushes it onto the tape
  (the LIFO stack shared by nested calls, which makes recursion work) just before it
  returns; the reverse function pops it on entry.
* a loop ``L``: a buffer with one record per iteration, indexed by a counter that
  the forward sweep adds to the loop header (0, 1, ...) and the reverse sweep counts
  down.  When the trip count is known on entry (``analysis.cfg.TripCount``) the buffer
  is allocated once in the preheader; otherwise (while loops) it grows by ``realloc``.
  Its pointer lives in a slot of the parent level; the reverse sweep frees it when it
  leaves the loop (the reverse of the preheader edge).

Where a loop's preheader is itself inside a loop, a buffer per entry would be one
allocation per iteration of the enclosing loop.  Two ways avoid that:

* *hoisting* (``big`` slots): when the trip counts of the loop and of its ancestors
  up to ``H`` can all be computed in ``H``'s preheader, one buffer for the whole of
  ``H`` is allocated there, sized by their product, and each execution of the loop
  indexes it by the linearised iteration numbers of the loops around it;
* *appending* (:func:`appended_buffers`, ``grow`` slots): otherwise (an inner trip
  count that depends on the outer loop, as in a triangular ``for (j = i + 1; j < n;
  j++)`` or a CSR row ``for (p = row[i]; p < row[i + 1]; p++)``), the records of every
  execution go one after another into one buffer per call of the function, grown
  (doubling, ``__enzyme_py_cache_bump``) when an execution's trip count does not fit;
  the parent's record keeps the byte offset of the execution's records instead of a
  pointer, and the buffer's final address goes into the frame.  This needs only the
  trip count of each execution in its own preheader (or in ``H``'s when hoisting
  applies too), whatever the loops around compute; the reverse sweep frees the
  buffer once, when it returns.

A value defined in an inner loop but needed after that loop (in reverse) is stored
at the outer level on every inner iteration: the last store wins, which is the value
the outer code saw.
"""

from __future__ import annotations

from ..ir import types as T
from ..ir.instructions import Br, Phi, Switch
from ..ir.values import ConstantInt

__all__ = ["Slot", "CacheLayout", "ensure_preheaders", "emit_trip_bound", "appended_buffers"]


class Slot:
    __slots__ = ("key", "level", "ty", "aug_value", "offset", "special")

    def __init__(self, key, level, ty, aug_value, special=False):
        self.key, self.level, self.ty, self.aug_value = key, level, ty, aug_value
        self.offset = None
        self.special = special


class CacheLayout:
    """Slots per level and their byte offsets (every slot 8-byte aligned)."""

    def __init__(self, dl):
        self.dl = dl
        self.slots: dict = {}       # (key, level) -> Slot
        self.by_level: dict = {}    # level -> [Slot]
        self.size: dict = {}        # level -> record size

    def slot(self, key, level, ty, aug_value, special=False) -> Slot:
        s = self.slots.get((key, level))
        if s is None:
            s = self.slots[(key, level)] = Slot(key, level, ty, aug_value, special)
            self.by_level.setdefault(level, []).append(s)
        return s

    def has_buffer(self, loop) -> bool:
        return bool(self.by_level.get(loop))

    def needs_buffer(self, loops) -> dict:
        """{loop: whether it will have a buffer}: slots of its own, or a child's
        buffer pointer to keep (what :meth:`assign_offsets` will lay out)."""
        needs = {lp: self.has_buffer(lp) for lp in loops}
        for lp in sorted(loops, key=lambda x: -x.depth):
            if needs[lp] and lp.parent is not None:
                needs[lp.parent] = True
        return needs

    def assign_offsets(self, loops, appended=()):
        """Give every loop with slots a pointer slot in its parent level (innermost loops
        first, so that parents learn they need a buffer), then lay out the records.
        For the loops in ``appended`` that slot holds a byte offset (i64)."""
        for lp in sorted(loops, key=lambda x: -x.depth):
            if self.has_buffer(lp):
                self.slot(("buf", lp), lp.parent, T.i64 if lp in appended else T.ptr, None,
                          special=True)
        for level, slots in self.by_level.items():
            off = 0
            for s in slots:
                s.offset = off
                off += (self.dl.store_size(s.ty) + 7) // 8 * 8
            self.size[level] = off

    def __str__(self):
        """One line a level, as ``-v`` logs it: the frame (pushed on the tape once per
        call) and, for each loop with a buffer, how the buffer is allocated."""
        labels: dict = {}

        def label(lp):
            if lp not in labels:
                labels[lp] = f"L{len(labels) + 1}"
            return labels[lp]

        hoisted = {s.key[1]: s.level for s in self.slots.values() if s.key[0] == "big"}
        appended = {s.key[1] for s in self.slots.values() if s.key[0] == "grow"}
        out = []
        for level, slots in self.by_level.items():
            fields = ", ".join(f"{_kname(s.key, label)}@{s.offset}" for s in slots[:_SHOWN])
            if len(slots) > _SHOWN:    # generated straight-line code caches thousands
                fields += f", ... ({len(slots) - _SHOWN} more, {len(slots)} values in all)"
            size = self.size.get(level, "?")
            if level is None:
                out.append(f"frame on the tape ({size} bytes): {fields}")
                continue
            where = f"in {label(level.parent)}" if level.parent is not None else "outermost"
            if not is_counted(level):
                kind = "while loop, buffer grown by realloc"
            elif level in appended:
                root = level
                while root.parent is not None:
                    root = root.parent
                kind = f"counted loop, appended to one buffer grown across {label(root)}"
            elif level in hoisted:
                h = level
                while h.parent is not hoisted[level]:
                    h = h.parent
                kind = f"counted loop, part of one buffer malloc'd before {label(h)}"
            else:
                kind = "counted loop, buffer malloc'd in its preheader"
            out.append(f"loop {label(level)} ({where}): {kind} ({size} bytes per "
                       f"iteration): {fields}")
        return "\n    ".join(out)

    def explain(self, reasons: dict) -> str:
        """Why the loads among the cached values are not read again in the reverse
        sweep: one line per reason of the overwrite analysis (``reasons``: load ->
        reason, the loads it found not recomputable), naming the loads."""
        groups: dict = {}
        for s in self.slots.values():
            v = s.key[1] if len(s.key) > 1 else None
            why = reasons.get(v)
            if why is not None:
                groups.setdefault(why, []).append(_vname(v))
        out = []
        for why, names in groups.items():
            shown = ", ".join(names[:4]) + (f", ... ({len(names)} in all)"
                                            if len(names) > 4 else "")
            out.append(f"cached load{'s' if len(names) > 1 else ''}: {why}: {shown}")
        return "\n    ".join(out)


_SHOWN = 12   # cached values named per level in the -v log


def is_counted(loop) -> bool:
    """Whether the buffer of ``loop`` is sized from its trip count on entry
    (:func:`emit_trip_bound` can bound it) rather than grown as it runs."""
    return loop.count is not None and loop.count.phi.type.width <= 64


def appended_buffers(loops, hoist, needs) -> set:
    """The counted loops whose buffer is allocated (in their preheader, or in that of
    ``hoist[loop]``, the ancestor their buffer is hoisted to) inside another loop: their
    records are appended to one buffer per call instead (see the module docstring)."""
    out = set()
    for lp in loops:
        if needs.get(lp) and is_counted(lp) and hoist.get(lp, lp).parent is not None:
            out.add(lp)
    return out


def _vname(v) -> str:
    """A cached value as ``-v`` names it: its IR name or opcode, and its source line
    when the program has debug information."""
    base = getattr(v, "name", None) or getattr(v, "opcode", "value")
    loc = getattr(v, "debug_loc", None) if getattr(v, "parent", None) is not None else None
    return f"{base} (line {loc[1]})" if loc else base


def _kname(key, label):
    tag, v = key[0], key[1]
    if hasattr(v, "header"):
        return f"{tag}:{label(v)}"
    name = getattr(v, "name", None)
    return f"{tag}:{name}" if name else tag


def ensure_preheaders(fn, cfg, loops) -> bool:
    """Give every natural loop a preheader (a single outside predecessor whose only
    successor is the header).  Returns True when the function changed."""
    changed = False
    for lp in loops.loops:
        if lp.preheader is not None:
            continue
        h = lp.header
        outside = [p for p in cfg.preds[h] if p not in lp.blocks]
        if not outside:
            continue
        for p in outside:
            t = p.terminator
            if not isinstance(t, (Br, Switch)):
                from .errors import ADError
                raise ADError(f"a loop in '{fn.name}' is entered from a "
                              f"'{t.opcode}' instruction; not supported yet")
        ph = fn.insert_basic_block(fn.blocks.index(h), f"{h.name or 'loop'}.enzyme.ph")
        for p in outside:
            t = p.terminator
            for u in list(t.operand_uses):
                if u.value is h:
                    t.set_operand(u.index, ph)
        for phi in h.phis:
            inc = [(v, b) for v, b in phi.incoming if b in outside]
            if len(inc) == 1:
                merged = inc[0][0]
            else:
                m = Phi(phi.type)
                ph.append(m)
                for v, b in inc:
                    m.add_incoming(v, b)
                merged = m
            for _, b in inc:
                phi.remove_incoming(b)
            phi.add_incoming(merged, ph)
        ph.append(Br(h))
        changed = True
    return changed


def emit_trip_bound(e, tc):
    """An i64 upper bound of the number of header executions of a loop described by
    ``tc`` (:class:`analysis.cfg.TripCount`), emitted at ``e``'s position (the
    preheader), or None when the phi is wider than 64 bits."""
    ty = tc.phi.type
    if ty.width > 64:
        return None
    i64 = T.i64
    a, b, extra = tc.distance()

    def ext(v, signed):
        if ty.width == 64:
            return v
        return e.cast("sext" if signed else "zext", v, i64)

    if tc.pred == "ne":
        # header executions: (a - b) + 1 when the phi is compared, (a - b - 1) + 1 when
        # its increment is (both modulo 2^width: a do-while entered at the bound wraps)
        d = e.sub(a, b)
        if tc.compared == "next":
            d = e.sub(d, ConstantInt(ty, 1))
        return e.add(ext(d, False), ConstantInt(i64, 2))
    d = e.sub(ext(a, tc.signed), ext(b, tc.signed))
    if extra:
        d = e.add(d, ConstantInt(i64, extra))
    zero = ConstantInt(i64, 0)
    d = e.select(e.icmp("sgt", d, zero), d, zero)
    step = abs(tc.step)
    if step != 1:
        d = e.add(d, ConstantInt(i64, step - 1))
        d = e.udiv(d, ConstantInt(i64, step))
    return e.add(d, ConstantInt(i64, 1))
