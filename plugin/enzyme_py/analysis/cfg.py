"""Control-flow graph, dominators, post-dominators and natural loops.

All results are read-only objects computed once per function body; they are
invalidated by any CFG edit (recompute them).  ``str(result)`` prints a
deterministic summary for golden tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CFG", "DomTree", "Loop", "LoopInfo", "dominators", "post_dominators", "find_loops"]


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


@dataclass(eq=False)
class Loop:
    header: object
    blocks: set = field(default_factory=set)
    latches: list = field(default_factory=list)
    parent: "Loop | None" = None
    children: list = field(default_factory=list)
    preheader: object = None
    exits: list = field(default_factory=list)       # blocks outside the loop reached from it
    exiting: list = field(default_factory=list)     # blocks inside with an edge out
    trip_count: object = None  # (start, bound, step, predicate) when recognised

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


def _trip_count(lp: Loop):
    """Recognise ``for (i = start; i <pred> bound; i += step)`` with one exiting block
    whose condition compares an induction phi (or its increment) to a loop-invariant."""
    from ..ir.instructions import Br, ICmp, Phi, BinaryOp
    if len(lp.exiting) != 1 or lp.preheader is None or len(lp.latches) != 1:
        return None
    term = lp.exiting[0].terminator
    if not isinstance(term, Br) or not term.is_conditional:
        return None
    cond = term.condition
    if not isinstance(cond, ICmp):
        return None
    a, bound = cond.operands
    for phi in lp.header.phis:
        start = phi.incoming_for(lp.preheader)
        nxt = phi.incoming_for(lp.latches[0])
        if not isinstance(nxt, BinaryOp) or nxt.opcode != "add" or nxt.operand(0) is not phi:
            continue
        if a is phi or a is nxt:
            invariant = not (bound.is_instruction and bound.parent in lp.blocks)
            if invariant:
                return (start, bound, nxt.operand(1), cond.predicate)
    return None
