"""A bounded walk over values: each value once, at most ``limit`` of them.

The analyses ask questions of the values reachable from one along uses or operands
("does this value flow only into stores to these pointers?", "is this pointer only
ever called?", "is this pointer built only from constants?").  Each question decides
what to follow; the walk keeps the work list, the values seen, and the bound that makes
a question about a large graph answer "don't know" (``exceeded``) instead of taking
time in proportion to the program.

    walk = BoundedWalk(v, limit=64)
    for x in walk:
        for u in x.uses:
            ...                 # return an answer, or walk.add(u.user) to follow it
    return not walk.exceeded
"""

from __future__ import annotations

__all__ = ["BoundedWalk", "derives_pointer"]


def derives_pointer(use) -> bool:
    """Whether the user of ``use`` is a pointer computed from the value used: a GEP, a
    cast, a phi, or a select choosing it (not as the select's condition)."""
    from .instructions import GEP, Cast, Phi, Select
    user = use.user
    return isinstance(user, (GEP, Cast, Phi, Select)) and user.type.is_pointer \
        and not (isinstance(user, Select) and use.index == 0)


class BoundedWalk:
    def __init__(self, start, limit: int):
        self._work = [start]
        self._seen: set = set()
        self._limit = limit
        self.exceeded = False     # more than ``limit`` values would have been visited

    def add(self, *values) -> None:
        self._work.extend(values)

    def __iter__(self):
        while self._work:
            x = self._work.pop()
            if x in self._seen:
                continue
            self._seen.add(x)
            if len(self._seen) > self._limit:
                self.exceeded = True
                return
            yield x
