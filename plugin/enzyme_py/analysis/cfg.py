"""Control-flow graph, dominators, post-dominators and natural loops.

All results are read-only objects computed once per function body; they are
invalidated by any CFG edit (recompute them).  ``str(result)`` prints a
deterministic summary for golden tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CFG", "DomTree", "Loop", "LoopInfo", "TripCount", "dominators", "post_dominators",
           "find_loops", "is_reducible"]


class CFG:
    """Reachable blocks of a function in reverse post-order, with edges."""

    def __init__(self, fn):
        self.fn = fn
        entry = fn.blocks[0]
        order, seen = [], {entry}
        stack = [(entry, iter(entry.successors))]
        while stack:
            b, it = stack[-1]
            for s in it:
                if s not in seen:
                    seen.add(s)
                    stack.append((s, iter(s.successors)))
                    break
            else:
                order.append(b)
                stack.pop()
        self.rpo = order[::-1]
        self.reachable = seen
        self.index = {b: i for i, b in enumerate(self.rpo)}
        self.succs = {b: _dedup(b.successors) for b in self.rpo}
        self.preds = {b: [] for b in self.rpo}
        for b in self.rpo:
            for s in self.succs[b]:
                self.preds[s].append(b)
        self.exits = [b for b in self.rpo if not self.succs[b]]

    def __str__(self):
        return "\n".join(f"{_n(b)} -> {', '.join(_n(s) for s in self.succs[b])}" for b in self.rpo)


def _dedup(xs):
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _n(b):
    return b.name if b.name is not None else f"bb{id(b) % 10000}"


class DomTree:
    """Immediate dominators (Cooper, Harvey, Kennedy) over a list of nodes in RPO."""

    def __init__(self, order, preds, roots):
        index = {b: i for i, b in enumerate(order)}
        idom = {r: r for r in roots}
        changed = True
        while changed:
            changed = False
            for b in order:
                if b in roots:
                    continue
                new = None
                for p in preds.get(b, ()):
                    if p not in idom:
                        continue
                    if new is None:
                        new = p
                        continue
                    a, c = p, new
                    while a is not c:
                        while index[a] > index[c]:
                            a = idom[a]
                        while index[c] > index[a]:
                            c = idom[c]
                    new = a
                if new is not None and idom.get(b) is not new:
                    idom[b] = new
                    changed = True
        self.idom = {b: (None if idom[b] is b else idom[b]) for b in idom}
        self.order = order

    def dominates(self, a, b) -> bool:
        """Does block ``a`` dominate block ``b`` (reflexive)?"""
        while b is not None:
            if b is a:
                return True
            b = self.idom.get(b)
        return False

    def __str__(self):
        return "\n".join(f"{_n(b)}: idom {_n(self.idom[b]) if self.idom.get(b) else '-'}"
                         for b in self.order if b in self.idom)


def dominators(cfg: CFG) -> DomTree:
    return DomTree(cfg.rpo, cfg.preds, {cfg.rpo[0]})


class _Exit:
    name = "<exit>"


def post_dominators(cfg: CFG) -> DomTree:
    """Post-dominators; a virtual exit node joins all blocks without successors."""
    vexit = _Exit()
    rsucc = {b: list(cfg.preds[b]) for b in cfg.rpo}
    rpreds = {b: list(cfg.succs[b]) or [vexit] for b in cfg.rpo}
    # reverse post-order of the reverse graph from the virtual exit
    order, seen = [], {vexit}
    roots = cfg.exits
    stack = [(vexit, iter(roots))]
    while stack:
        b, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(rsucc[s])))
                break
        else:
            order.append(b)
            stack.pop()
    order = order[::-1]
    return DomTree(order, rpreds, {vexit})


def is_reducible(cfg: CFG, dom: DomTree) -> bool:
    """Every retreating edge (to a block not later in RPO) goes to a dominator."""
    for b in cfg.rpo:
        for s in cfg.succs[b]:
            if cfg.index[s] <= cfg.index[b] and not dom.dominates(s, b):
                return False
    return True


@dataclass(eq=False)
class Loop:
    header: object
    blocks: set = field(default_factory=set)
    latches: list = field(default_factory=list)
    parent: Loop | None = None
    children: list = field(default_factory=list)
    preheader: object = None
    exits: list = field(default_factory=list)       # blocks outside the loop reached from it
    exiting: list = field(default_factory=list)     # blocks inside with an edge out
    trip_count: object = None  # (start, bound, step, predicate) when recognised
    count: TripCount | None = None  # normalised, for sizing per-iteration caches

    @property
    def depth(self) -> int:
        d, p = 1, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d


class LoopInfo:
    def __init__(self, loops, loop_of):
        self.loops = loops
        self._loop_of = loop_of

    def loop_of(self, block) -> Loop | None:
        """The innermost loop containing ``block``."""
        return self._loop_of.get(block)

    def in_loop(self, block) -> bool:
        return block in self._loop_of

    def __str__(self):
        out = []
        for lp in self.loops:
            out.append(f"loop {_n(lp.header)} depth {lp.depth}: "
                       + " ".join(sorted(_n(b) for b in lp.blocks))
                       + f" preheader {_n(lp.preheader) if lp.preheader else '-'}"
                       + f" trip {lp.trip_count[3] if lp.trip_count else '?'}")
        return "\n".join(out)


def find_loops(cfg: CFG, dom: DomTree) -> LoopInfo:
    """Natural loops (one per header, back edges merged), nested by containment."""
    by_header: dict = {}
    for b in cfg.rpo:
        for s in cfg.succs[b]:
            if dom.dominates(s, b):
                lp = by_header.setdefault(s, Loop(s, {s}))
                lp.latches.append(b)
                work = [b]
                while work:
                    x = work.pop()
                    if x not in lp.blocks:
                        lp.blocks.add(x)
                        work.extend(cfg.preds[x])
    loops = sorted(by_header.values(), key=lambda lp: len(lp.blocks))
    loop_of: dict = {}
    for lp in loops:  # smallest first: innermost wins
        for b in lp.blocks:
            loop_of.setdefault(b, lp)
    for i, lp in enumerate(loops):
        for outer in loops[i + 1:]:
            if lp.header in outer.blocks and outer is not lp:
                lp.parent = outer
                outer.children.append(lp)
                break
        outside = [p for p in cfg.preds[lp.header] if p not in lp.blocks]
        if len(outside) == 1 and len(cfg.succs[outside[0]]) == 1:
            lp.preheader = outside[0]
        for b in cfg.rpo:
            if b in lp.blocks:
                outs = [s for s in cfg.succs[b] if s not in lp.blocks]
                if outs:
                    lp.exiting.append(b)
                    lp.exits.extend(s for s in outs if s not in lp.exits)
        lp.trip_count = _trip_count(lp)
    return LoopInfo(loops, loop_of)


_SWAP = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt", "ugt": "ult",
         "ule": "uge", "uge": "ule", "eq": "eq", "ne": "ne"}
_NOT = {"slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt", "ult": "uge", "uge": "ult",
        "ugt": "ule", "ule": "ugt", "eq": "ne", "ne": "eq"}


@dataclass(eq=False)
class TripCount:
    """``for (iv = start; iv <pred> bound; iv += step)`` normalised: the loop keeps
    going while ``x <pred> bound`` where ``x`` is the induction phi (``compared ==
    "phi"``) or its increment (``"next"``); ``step`` is a non-zero constant whose sign
    agrees with ``pred`` (``ne`` needs a step of +-1).  ``count_bound()`` describes an
    upper bound of the number of header executions, ``max(0, ceil(D / |step|)) + 1``
    with ``D`` from :meth:`distance`."""

    phi: object
    start: object
    bound: object
    step: int
    pred: str
    compared: str

    @property
    def signed(self) -> bool:
        return self.pred[0] == "s"

    def distance(self):
        """``(a, b, extra)``: ``D = a - b + extra`` (in the phi's type, extended)."""
        if self.pred in ("slt", "ult"):
            return self.bound, self.start, 0
        if self.pred in ("sle", "ule"):
            return self.bound, self.start, 1
        if self.pred in ("sgt", "ugt"):
            return self.start, self.bound, 0
        if self.pred in ("sge", "uge"):
            return self.start, self.bound, 1
        # ne, step +-1: D = (bound - start) * step, modulo 2^width
        return (self.bound, self.start, 0) if self.step > 0 else (self.start, self.bound, 0)


def _trip_count(lp: Loop):
    """Recognise ``for (i = start; i <pred> bound; i += step)`` with one exiting block
    whose condition compares an induction phi (or its increment) to a loop-invariant.
    Sets ``lp.count`` (a :class:`TripCount` or None) and returns
    ``(start, bound, step, predicate)`` as written in the IR."""
    from ..ir.instructions import Br, ICmp, BinaryOp
    from ..ir.values import ConstantInt
    lp.count = None
    if len(lp.exiting) != 1 or lp.preheader is None or len(lp.latches) != 1:
        return None
    term = lp.exiting[0].terminator
    if not isinstance(term, Br) or not term.is_conditional:
        return None
    cond = term.condition
    if not isinstance(cond, ICmp):
        return None
    a, bound = cond.operands
    pred = cond.predicate
    swapped = False

    def invariant(v):
        return not (v.is_instruction and v.parent in lp.blocks)

    for phi in lp.header.phis:
        start = phi.incoming_for(lp.preheader)
        nxt = phi.incoming_for(lp.latches[0])
        if not isinstance(nxt, BinaryOp) or nxt.opcode != "add" or nxt.operand(0) is not phi:
            continue
        x = a
        if a is not phi and a is not nxt and (bound is phi or bound is nxt):
            x, bound, swapped = bound, a, True
        if x is not phi and x is not nxt:
            continue
        if not invariant(bound):
            continue
        step = nxt.operand(1)
        result = (start, bound, step, cond.predicate) if not swapped else None
        # normalised description for cache sizing
        cpred = _SWAP[pred] if swapped else pred
        succs = term.successors
        if succs[0] in lp.blocks and succs[1] not in lp.blocks:
            pass
        elif succs[1] in lp.blocks and succs[0] not in lp.blocks:
            cpred = _NOT[cpred]
        else:
            return result
        if isinstance(step, ConstantInt) and step.value != 0 and phi.type.is_int:
            sv = step.value
            ok = ((cpred in ("slt", "sle", "ult", "ule") and sv > 0)
                  or (cpred in ("sgt", "sge", "ugt", "uge") and sv < 0)
                  or (cpred == "ne" and sv in (1, -1)))
            if ok:
                lp.count = TripCount(phi, start, bound, sv, cpred,
                                     "phi" if x is phi else "next")
        return result
    return None
